import { fileURLToPath } from 'node:url';
import {
  ownManifest,
  parseEnv,
  resolveMcpUpstream,
  serverEnvSchema,
  type McpUpstreamConfig,
  type ServerEnv,
} from '@bulkhead/core';
import pkg from '../package.json' with { type: 'json' };

/** This deployable's manifest (`bulkhead` in package.json), read through the one manifest schema. */
const manifest = ownManifest(pkg);

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.port;

/** The MCP server this server stands in front of (`bulkhead.mcpUpstream` in package.json), written nowhere else. */
export const MCP_UPSTREAM = (() => {
  if (!manifest.mcpUpstream) throw new Error('package.json declares no bulkhead.mcpUpstream');
  return manifest.mcpUpstream;
})();

/** This server's folder: relative paths of the upstream's command, arguments and secret files start here. */
const FOLDER = fileURLToPath(new URL('..', import.meta.url));

/** The upstream resolved against `env`: its child's variables or its header, each from a variable or a file. */
export function mcpUpstreamConfig(env: Record<string, string | undefined> = process.env): McpUpstreamConfig {
  return resolveMcpUpstream(MCP_UPSTREAM, env, FOLDER)!;
}

/** The one place this deployable reads the environment: the kit's variables, and the upstream's secrets. */
export function loadEnv(
  env: Record<string, string | undefined> = process.env,
): ServerEnv & { mcpUpstreams: McpUpstreamConfig[] } {
  return { ...parseEnv(serverEnvSchema(DEFAULT_PORT), env), mcpUpstreams: [mcpUpstreamConfig(env)] };
}
