import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ServerDefinition } from '@bulkhead/core';
import { discoverDeployables, type Deployable } from '@bulkhead/deployables';
import { root } from './helpers.ts';

/** An MCP server as the repository declares it: its folder, and the `bulkhead` field of its package.json. */
export type McpServerManifest = Deployable;

/** Every MCP server under servers/ (kind `mcp` in its package.json `bulkhead` field), in port order. */
export function discoverMcpServers(): McpServerManifest[] {
  return discoverDeployables(root).filter((d) => d.kind === 'mcp');
}

/** The definition a server's `src/server.ts` exports (a server builds exactly one). */
export async function loadServerDefinition(server: McpServerManifest): Promise<ServerDefinition> {
  const module = (await import(pathToFileURL(join(server.dir, 'src', 'server.ts')).href)) as Record<
    string,
    unknown
  >;
  const defs = Object.values(module).filter(
    (v): v is ServerDefinition => typeof v === 'object' && v !== null && 'catalog' in v && 'name' in v,
  );
  if (defs.length !== 1 || defs[0]!.name !== server.name)
    throw new Error(
      `servers/${server.name}/src/server.ts must export exactly one server definition named ${server.name}`,
    );
  return defs[0]!;
}

/** Every MCP server's definition, discovered (nothing lists them by name). */
export async function discoverServerDefinitions(): Promise<ServerDefinition[]> {
  return Promise.all(discoverMcpServers().map(loadServerDefinition));
}
