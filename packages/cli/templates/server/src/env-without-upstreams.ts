import { ownManifest, parseEnv, serverEnvSchema, type ServerEnv } from '@bulkhead/core';
import pkg from '../package.json' with { type: 'json' };

/** This deployable's manifest (`bulkhead` in package.json), read through the one manifest schema. */
const manifest = ownManifest(pkg);

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.port;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ServerEnv {
  return parseEnv(serverEnvSchema(DEFAULT_PORT), env);
}
