import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtInDeployables } from './built-in.ts';
import { discoverDeployables } from './deployables.ts';

describe('builtInDeployables', () => {
  it('run from source, is the repository around it, each deployable named and reachable, nothing more', () => {
    const found = discoverDeployables(fileURLToPath(new URL('../../../', import.meta.url)));
    const builtIn = builtInDeployables();
    expect(builtIn.map((d) => d.name)).toEqual(found.map((d) => d.name));
    expect(builtIn.map((d) => d.name)).toContain('dev-knowledge');
    for (const d of builtIn)
      expect(Object.keys(d).sort()).toEqual(
        ['customerBound', 'description', 'gated', 'kind', 'name', 'port', 'scopes'].sort(),
      );
    // No other server's tool name travels with the list (a probe names one; the console image holds the list).
    const probes = found.flatMap((d) => (d.probe ? [d.probe.tool] : []));
    expect(probes.length).toBeGreaterThan(0);
    for (const tool of probes) expect(JSON.stringify(builtIn)).not.toContain(tool);
  });
});
