import {
  ownManifest,
  parseEnv,
  resolveUpstreams,
  serverEnvSchema,
  type ServerEnv,
  type UpstreamConfig,
} from '@bulkhead/core';
import pkg from '../package.json' with { type: 'json' };

/** This deployable's manifest (`bulkhead` in package.json), read through the one manifest schema. */
const manifest = ownManifest(pkg);

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.port;

/** The systems this server may reach (`bulkhead.upstreams` in package.json), written nowhere else. */
export const UPSTREAMS = manifest.upstreams;

/**
 * The one place this deployable reads the environment: the kit's variables, and for each upstream its
 * base URL and its secret (from the variables, or files, its manifest entry names).
 */
export function loadEnv(
  env: Record<string, string | undefined> = process.env,
): ServerEnv & { upstreams: UpstreamConfig[] } {
  return { ...parseEnv(serverEnvSchema(DEFAULT_PORT), env), upstreams: resolveUpstreams(UPSTREAMS, env) };
}
