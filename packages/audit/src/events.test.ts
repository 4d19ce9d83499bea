import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NOT_REFUSED_OUTCOMES, OUTCOMES, SUCCESSFUL_OUTCOMES } from './events.ts';

const ROOT = join(import.meta.dirname, '../../..');

/** Every TypeScript source file of the packages, servers and the console, tests included. */
function sources(): string[] {
  const found: string[] = [];
  for (const top of ['packages', 'servers', 'apps'])
    for (const entry of readdirSync(join(ROOT, top), { recursive: true, withFileTypes: true })) {
      const path = join(entry.parentPath, entry.name);
      if (!entry.isFile() || !/\.tsx?$/.test(entry.name) || path.includes('node_modules')) continue;
      found.push(path);
    }
  return found;
}

describe('the outcome sets', () => {
  it('say which outcomes are successful and which are no refusal', () => {
    expect(SUCCESSFUL_OUTCOMES).toEqual(['ok', 'pending_approval', 'approved', 'executed']);
    expect([...NOT_REFUSED_OUTCOMES].sort()).toEqual(
      ['approved', 'executed', 'expired', 'ok', 'pending_approval', 'rejected', 'withdrawn'].sort(),
    );
    for (const outcome of NOT_REFUSED_OUTCOMES) expect(OUTCOMES).toContain(outcome);
    for (const outcome of SUCCESSFUL_OUTCOMES) expect(NOT_REFUSED_OUTCOMES).toContain(outcome);
  });

  it('are written down once: no other source file lists them again', () => {
    // A copy starts as the same list and drifts; the metrics, the span marking and the console's chart import these.
    const copy = /['"]ok['"],\s*['"]pending_approval['"]/;
    const here = join(import.meta.dirname, 'events.ts');
    const copies = sources()
      .filter((path) => path !== here && path !== import.meta.filename)
      .filter((path) => copy.test(readFileSync(path, 'utf8')))
      .map((path) => relative(ROOT, path));
    expect(copies).toEqual([]);
  });
});
