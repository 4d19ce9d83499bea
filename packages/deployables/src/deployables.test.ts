import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverDeployables, ManifestError, readDeployable } from './deployables.ts';

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bulkhead-deployables-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A deployable folder `<folder>/<name>` (servers/ unless told) whose package.json has this `bulkhead` field. */
async function deployable(name: string, bulkhead: unknown, folder = 'servers'): Promise<string> {
  const dir = join(root, folder, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name, bulkhead }));
  return dir;
}

describe('readDeployable: upstreams', () => {
  it('lists each upstream with the variable that holds its base URL, none when the manifest has none', async () => {
    const ops = await deployable('ops', {
      port: 3104,
      upstreams: {
        alertmanager: { baseUrlEnv: 'BULKHEAD_OPS_ALERTMANAGER_URL', auth: { type: 'none' } },
        vault: { baseUrlEnv: 'VAULT_URL' },
      },
    });
    expect(readDeployable(ops)!.upstreams).toEqual([
      { name: 'alertmanager', baseUrlEnv: 'BULKHEAD_OPS_ALERTMANAGER_URL' },
      { name: 'vault', baseUrlEnv: 'VAULT_URL' },
    ]);
    expect(readDeployable(await deployable('plain', { port: 3105 }))!.upstreams).toEqual([]);
  });

  it('names the field when an upstream has no base URL variable or the section is not an object', async () => {
    const noVariable = await deployable('no-variable', { port: 3106, upstreams: { alerts: { title: 'x' } } });
    expect(() => readDeployable(noVariable)).toThrow(ManifestError);
    expect(() => readDeployable(noVariable)).toThrow(
      'servers/no-variable/package.json: bulkhead.upstreams.alerts.baseUrlEnv: the variable that holds its base URL',
    );
    const list = await deployable('list', { port: 3107, upstreams: ['alerts'] });
    expect(() => readDeployable(list)).toThrow('servers/list/package.json: bulkhead.upstreams: {');
  });
});

describe('discoverDeployables', () => {
  it('finds the MCP servers under servers/ and the apps under apps/, in port order', async () => {
    const base = join(root, 'repo');
    await deployable('web', { kind: 'console', port: 3100 }, 'repo/apps');
    await deployable('billing', { port: 3102 }, 'repo/servers');
    await deployable('docs', { port: 3101 }, 'repo/servers');
    await mkdir(join(base, 'servers', 'no-manifest'), { recursive: true });
    expect(discoverDeployables(base).map((d) => [d.name, d.kind, d.dir])).toEqual([
      ['web', 'console', join(base, 'apps', 'web')],
      ['docs', 'mcp', join(base, 'servers', 'docs')],
      ['billing', 'mcp', join(base, 'servers', 'billing')],
    ]);
  });

  it('names the folder a bad manifest is in', async () => {
    const app = await deployable('bad-app', { port: 'x' }, 'apps');
    expect(() => readDeployable(app)).toThrow('apps/bad-app/package.json: bulkhead.port: a whole number');
  });
});
