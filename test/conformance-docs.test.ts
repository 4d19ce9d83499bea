import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { root } from './helpers.ts';

describe('the list of conformance scenarios that do not apply in docs/tests.md', () => {
  it('is test/conformance/not-applicable.yaml, row for row, with the reasons', () => {
    const listed = parse(readFileSync(`${root}test/conformance/not-applicable.yaml`, 'utf8')) as Record<
      string,
      string
    >;
    const page = readFileSync(`${root}docs/tests.md`, 'utf8');
    const section = page.slice(page.indexOf('## The MCP conformance suite'));
    const rows = section.split('\n').filter((l) => /^\| `[a-z0-9:/-]+` \|/.test(l));
    expect(rows).toEqual(Object.entries(listed).map(([entry, why]) => `| \`${entry}\` | ${why} |`));
    expect(rows.length).toBeGreaterThan(40);
  });
});
