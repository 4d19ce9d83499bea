import { serverSurface } from '@bulkhead/core/testing';
import { describe, expect, it } from 'vitest';
import { __SERVER__ as def } from './server.ts';
import { __FINDINGS__ } from './stand-ins.ts';

describe('what the model sees of __SERVER_NAME__', () => {
  const surface = serverSurface(def, new URL('../package.json', import.meta.url));

  // The upstream wrote these descriptions, not this repository: what the linter found in them when they
  // were pinned is listed here. Answer a finding with the tool's `served.description` in pins.json
  // (what the model sees instead), then take it off this list; the list only ever gets shorter.
  it('lints as pinned: only the findings the upstream’s own text had, each to answer in pins.json', () => {
    expect(surface.findings.map((f) => `${f.tool} ${f.rule} ${f.path}`)).toEqual(__FINDINGS__);
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
