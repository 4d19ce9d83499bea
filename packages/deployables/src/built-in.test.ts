import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { builtInDeployables } from './built-in.ts';
import { discoverDeployables } from './deployables.ts';

describe('builtInDeployables', () => {
  it('run from source, is the repository around it, without folders or grants', () => {
    const found = discoverDeployables(fileURLToPath(new URL('../../../', import.meta.url)));
    const builtIn = builtInDeployables();
    expect(builtIn.map((d) => d.name)).toEqual(found.map((d) => d.name));
    expect(builtIn.map((d) => d.name)).toContain('dev-knowledge');
    for (const d of builtIn) expect(Object.keys(d)).not.toEqual(expect.arrayContaining(['dir']));
    for (const d of builtIn) expect(Object.keys(d)).not.toEqual(expect.arrayContaining(['grantsSql']));
  });
});
