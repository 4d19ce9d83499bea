import { describe, expect, it } from 'vitest';
import { SECTION_MAX_CHARS, splitSections } from './sections.ts';

const para = (n: number, word = 'word') => Array.from({ length: n }, () => word).join(' ');

describe('splitSections', () => {
  it('keeps a short body whole', () => {
    expect(splitSections('## A\n\nshort')).toEqual(['## A\n\nshort']);
    expect(splitSections('x'.repeat(SECTION_MAX_CHARS))).toEqual(['x'.repeat(SECTION_MAX_CHARS)]);
  });

  it('cuts before headings, packing as many whole sections as fit', () => {
    const a = `## A\n\n${para(300)}\n\n`; // 1506 chars
    const b = `## B\n\n${para(300)}\n\n`;
    const c = `## C\n\n${para(300)}\n\n`;
    const d = `## D\n\n${para(300)}\n`;
    const body = a + b + c + d + a + b;
    const sections = splitSections(body, 4000);
    expect(sections).toEqual([a + b, c + d, a + b]);
  });

  it('ignores headings inside code fences', () => {
    const fence = '```\n# not a heading\n```\n';
    const body = `${para(100)}\n${fence}${para(100)}\n\n${para(100)}`;
    const sections = splitSections(body, 1000);
    expect(sections.join('')).toBe(body);
    expect(sections.some((s) => s.startsWith('# not a heading'))).toBe(false);
  });

  it('falls back to paragraph, then line, then a hard cut, and never splits a surrogate pair', () => {
    const paragraphs = `${para(150)}\n\n${para(150)}\n\n${para(150)}`;
    expect(splitSections(paragraphs, 1000)).toEqual([`${para(150)}\n\n`, `${para(150)}\n\n`, para(150)]);
    const lines = `${para(150)}\n${para(150)}`;
    expect(splitSections(lines, 1000)).toEqual([`${para(150)}\n`, para(150)]);
    const emoji = '😀'.repeat(10); // 20 UTF-16 units
    const cut = splitSections(`a${emoji}`, 10);
    expect(cut.join('')).toBe(`a${emoji}`);
    expect(cut.every((s) => s.length <= 10 && !/^[\uDC00-\uDFFF]/.test(s))).toBe(true);
  });

  it('always reassembles to exactly the body, with no section over the limit', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 50; round++) {
      const parts: string[] = [];
      for (let i = 0; i < 40; i++) {
        const r = rand();
        parts.push(
          r < 0.2
            ? `## Heading ${i}\n`
            : r < 0.3
              ? '\n'
              : r < 0.35
                ? '```\n'
                : `${para(Math.floor(rand() * 120), 'lorem')}\n`,
        );
      }
      const body = parts.join('');
      const sections = splitSections(body, 800);
      expect(sections.join('')).toBe(body);
      expect(sections.every((s) => s.length > 0 && s.length <= 800)).toBe(true);
    }
  });
});
