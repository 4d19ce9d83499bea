import { serverSurface } from '@bulkhead/core/testing';
import { describe, expect, it } from 'vitest';
import { __SERVER__ as def } from './server.ts';

describe('what the model sees of __SERVER_NAME__', () => {
  const surface = serverSurface(def, new URL('../package.json', import.meta.url));

  it('lints clean: every tool passes every rule of the tool linter', () => {
    expect(surface.findings).toEqual([]);
  });

  it('keeps what a model reads within the kit’s budget of 6,000; the whole list is measured, not budgeted', () => {
    expect([surface.modelBudgetChars, surface.budgetChars]).toEqual([6000, undefined]);
    expect(surface.modelChars).toBeLessThanOrEqual(6000);
    expect(surface.chars).toBeGreaterThan(surface.modelChars);
  });

  it('declares in package.json exactly the scopes its tools need', () => {
    expect(surface.declaredScopes).toEqual(surface.toolScopes);
  });
});
