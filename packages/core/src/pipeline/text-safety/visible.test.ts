import { describe, expect, it } from 'vitest';
import { escapeJson, hiddenCodePointName, isHiddenCodePoint, visible, visibleParts } from './visible.ts';

describe('visible', () => {
  it('shows controls, bidirectional and zero-width characters as [U+XXXX], and leaves writing alone', () => {
    expect(visible('Refund €7.00 to C-1004\u001b[31m\u202eok.')).toBe(
      'Refund €7.00 to C-1004[U+001B][31m[U+202E]ok.',
    );
    expect(visible('pay\u200bpal\u2060 \ufeffx\u2066y\u2069')).toBe(
      'pay[U+200B]pal[U+2060] [U+FEFF]x[U+2066]y[U+2069]',
    );
    expect(visible('Grüße, Müller — 東京 مرحبا שלום 👍🏽')).toBe('Grüße, Müller — 東京 مرحبا שלום 👍🏽');
  });

  it('shows spaces that pass for a space, blank letters, tags, private-use, unassigned and lone surrogates', () => {
    expect(visible('a\u00a0b\u2009c\u3000d\u202fe')).toBe('a[U+00A0]b[U+2009]c[U+3000]d[U+202F]e');
    expect(visible('x\u3164y\u2800z\ufe0fw')).toBe('x[U+3164]y[U+2800]z[U+FE0F]w');
    expect(visible('t\u{e0041}\u{e0042}\ue000\u{10ffff}\ud800')).toBe(
      't[U+E0041][U+E0042][U+E000][U+10FFFF][U+D800]',
    );
  });

  it('shows line breaks unless they are meant; a lone carriage return always', () => {
    expect(visible('one\ntwo\r\nthree\rfour\tfive')).toBe(
      'one[U+000A]two[U+000D][U+000A]three[U+000D]four[U+0009]five',
    );
    expect(visible('one\ntwo\r\nthree\rfour\u2028five', { lineBreaks: true })).toBe(
      'one\ntwo\r\nthree[U+000D]four[U+2028]five',
    );
  });

  it('cuts text into plain runs and hidden code points', () => {
    expect(visibleParts('Re: \u202egnp.exe')).toEqual([
      { text: 'Re: ' },
      { hidden: 0x202e },
      { text: 'gnp.exe' },
    ]);
    expect(visibleParts('')).toEqual([]);
    expect(isHiddenCodePoint(0x20)).toBe(false);
    expect(isHiddenCodePoint(0xa0)).toBe(true);
  });

  it('names what a hidden code point does', () => {
    expect(hiddenCodePointName(0x202e)).toBe('right-to-left override: reverses the text after it');
    expect(hiddenCodePointName(0x2009)).toBe('a space other than the ordinary one: looks like a space');
    expect(hiddenCodePointName(0xe0041)).toBe('tag character: invisible, can carry hidden text');
    expect(hiddenCodePointName(0x0007)).toBe('control character');
  });

  it('escapes in JSON what JSON.stringify leaves raw', () => {
    expect(escapeJson(JSON.stringify({ s: 'a\u202eb\u0085c\u2028' }))).toBe(
      '{"s":"a\\u202eb\\u0085c\\u2028"}',
    );
  });
});
