import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { hasGatedTools } from '@bulkhead/core';
import { discoverDeployables, type Deployable } from '@bulkhead/deployables';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.ts';
import { discoverMcpServers, loadServerDefinition } from './servers.ts';

// A fact about a server is written once, in its manifest (the `bulkhead` field of its package.json);
// this file checks that the manifest tells the truth about the server's own code.

const deployables = discoverDeployables(root);
const mcp = await Promise.all(
  discoverMcpServers().map(async (m) => ({ manifest: m, def: await loadServerDefinition(m) })),
);

it('finds the deployables under servers/ and apps/, each on a port of its own', () => {
  const ports = deployables.map((d) => d.port);
  expect(new Set(ports).size).toBe(ports.length);
  expect(mcp.length).toBeGreaterThanOrEqual(2);
  expect(deployables.filter((d) => d.kind === 'console').map((d) => d.dir)).toEqual([
    join(root, 'apps', 'console'),
  ]);
});

/**
 * The variables a deployable's upstreams need (`bulkhead.upstreams`: a base URL and secrets from the
 * environment), each given a placeholder: a missing one stops the start, which is another test's matter.
 */
function upstreamVariables(deployable: Deployable): Record<string, string> {
  const env: Record<string, string> = {};
  for (const u of Object.values(deployable.manifest.upstreams)) {
    env[u.baseUrlEnv] = 'http://127.0.0.1:9';
    for (const [key, value] of Object.entries(u.auth))
      if (key.endsWith('Env') && typeof value === 'string') env[value] = 'placeholder';
  }
  return env;
}

describe.each(deployables.map((d) => [d.name, d] as const))('%s', (_, deployable) => {
  it('listens on its manifest port when PORT is unset (env.ts reads it from package.json)', async () => {
    const env = (await import(pathToFileURL(join(deployable.dir, 'src', 'env.ts')).href)) as {
      loadEnv(env: Record<string, string>): { PORT: number };
    };
    expect(env.loadEnv(upstreamVariables(deployable)).PORT).toBe(deployable.port);
  });
});

describe.each(mcp.map((s) => [s.manifest.name, s] as const))('the manifest of %s', (_, { manifest, def }) => {
  it('declares exactly the scopes its tools need', () => {
    expect([...manifest.scopes].sort()).toEqual([...def.catalog.scopes].sort());
  });

  it('says gated exactly when a tool of the server stops at an approval gate', () => {
    expect(manifest.gated).toBe(hasGatedTools(def));
  });

  it('names a probe: a read tool of its own, with arguments its schema accepts', () => {
    expect(manifest.probe).not.toBeNull();
    const tool = def.catalog.byName.get(manifest.probe!.tool);
    expect(tool, `bulkhead.probe.tool ${manifest.probe!.tool}`).toBeDefined();
    expect(tool!.annotations.readOnlyHint).toBe(true);
    expect(tool!.input.safeParse(manifest.probe!.arguments).success).toBe(true);
  });

  it.runIf(manifest.customerBound)('is customer-bound: no tool takes the customer as an argument', () => {
    const customerArguments = [...def.catalog.listings.values()].flatMap((l) =>
      Object.keys((l.inputSchema.properties ?? {}) as Record<string, unknown>)
        .filter((p) => /customer/.test(p))
        .map((p) => `${l.name}.${p}`),
    );
    expect(customerArguments).toEqual([]);
  });
});
