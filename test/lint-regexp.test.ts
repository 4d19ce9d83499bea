import { describe, expect, it } from 'vitest';
import { lintAs } from './eslint-without-types.ts';

/** What `bulkhead/no-dynamic-regexp` reports for `code` as if it were the file at `path`. */
async function findings(path: string, code: string): Promise<string[]> {
  return (await lintAs(path, `${code}\n`))
    .filter((m) => m.ruleId === 'bulkhead/no-dynamic-regexp')
    .map((m) => m.message.slice(0, m.message.indexOf(':')));
}

const TOOL = 'servers/ops/src/tools/list-alerts.ts';
const BUILT = 'A RegExp built from a value that is not a literal';

describe('eslint.config.js: no model-supplied pattern on the backtracking engine', () => {
  it("refuses a RegExp built from anything but a literal in a server's source", async () => {
    expect(await findings(TOOL, 'export const f = (v: string) => new RegExp(`^(?:${v})$`, "u");')).toEqual([
      BUILT,
    ]);
    expect(await findings(TOOL, 'export const f = (v: string) => RegExp(v);')).toEqual([BUILT]);
    expect(await findings(TOOL, 'export const f = (v: string) => new globalThis.RegExp(v);')).toEqual([
      BUILT,
    ]);
    expect(await findings(TOOL, 'export const f = (v: string) => new RegExp("a", v);')).toEqual([BUILT]);
  });

  it('refuses match, matchAll and search with anything but a regex literal', async () => {
    expect(await findings(TOOL, 'export const f = (s: string, v: string) => s.match(v);')).toEqual([
      '.match() turns a string into a RegExp',
    ]);
    expect(await findings(TOOL, 'export const f = (s: string, v: string) => s.search(v);')).toEqual([
      '.search() turns a string into a RegExp',
    ]);
    expect(await findings(TOOL, 'export const f = (s: string) => [...s.matchAll(/a/g)];')).toEqual([]);
  });

  it('lets literals through, and leaves tests and the kit alone', async () => {
    const literals =
      'export const a = new RegExp("^a$", "u");\nexport const b = new RegExp(`^b$`);\n' +
      'export const c = new RegExp(/c/, "g");\nexport const d = (s: string) => s.match(/d/);';
    expect(await findings(TOOL, literals)).toEqual([]);
    const dynamic = 'export const f = (v: string) => new RegExp(v);';
    expect(await findings('servers/ops/src/silences.test.ts', dynamic)).toEqual([]);
    expect(await findings('packages/core/src/pipeline/text-safety/untrusted/patterns.ts', dynamic)).toEqual(
      [],
    );
  });
});
