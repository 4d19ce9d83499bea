import { serverSurface } from '@bulkhead/core/testing';
import { describe, expect, it } from 'vitest';
import { opsServer as def } from './server.ts';

describe('what the model sees of ops', () => {
  const surface = serverSurface(def, new URL('../package.json', import.meta.url));

  it('lints clean: every tool passes every rule of the tool linter', () => {
    expect(surface.findings).toEqual([]);
  });

  it('keeps tools/list within the kit’s budgets: 6,000 for what a model reads, 12,000 in all', () => {
    expect([def.modelBudgetChars, def.toolsBudgetChars]).toEqual([6000, 12_000]);
    expect([surface.modelBudgetChars, surface.budgetChars]).toEqual([6000, 12_000]);
    expect(surface.modelChars).toBeLessThanOrEqual(6000);
    expect(surface.chars).toBeLessThanOrEqual(12_000);
  });

  it('declares in package.json exactly the scopes its tools need', () => {
    expect(surface.declaredScopes).toEqual(surface.toolScopes);
  });
});
