import { readFileSync } from 'node:fs';
import { lintServer } from '@bulkhead/core';
import { describe, expect, it } from 'vitest';
import { customerServer as def } from './server.ts';

const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  bulkhead: { scopes: string[] };
};

describe('what the model sees of customer', () => {
  const result = lintServer(def);

  it('lints clean: every tool passes every rule of the tool linter', () => {
    expect(result.findings).toEqual([]);
  });

  it('keeps tools/list within the server’s budget', () => {
    expect(result.budgetChars).toBe(def.toolsBudgetChars);
    expect(result.size.chars).toBeLessThanOrEqual(def.toolsBudgetChars);
  });

  it('declares in package.json exactly the scopes its tools need', () => {
    expect(manifest.bulkhead.scopes).toEqual([...def.catalog.scopes]);
  });
});
