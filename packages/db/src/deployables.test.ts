import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManifestError, readDeployable } from './deployables.ts';

let root = '';
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bulkhead-deployables-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A deployable folder `servers/<name>` whose package.json has this `bulkhead` field. */
async function deployable(name: string, bulkhead: unknown): Promise<string> {
  const dir = join(root, 'servers', name);
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
