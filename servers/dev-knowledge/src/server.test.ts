import { serverSurface } from '@bulkhead/core/testing';
import { describe, expect, it } from 'vitest';
import { devKnowledgeServer as def } from './server.ts';

describe('what the model sees of dev-knowledge', () => {
  const surface = serverSurface(def, new URL('../package.json', import.meta.url));

  it('lints clean: every tool passes every rule of the tool linter', () => {
    expect(surface.findings).toEqual([]);
  });

  it('keeps tools/list within the server’s budget', () => {
    expect(surface.budgetChars).toBe(def.toolsBudgetChars);
    expect(surface.chars).toBeLessThanOrEqual(def.toolsBudgetChars);
  });

  it('declares in package.json exactly the scopes its tools need', () => {
    expect(surface.declaredScopes).toEqual(surface.toolScopes);
  });
});
