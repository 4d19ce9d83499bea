import { parseEnv, serverEnvSchema, type ServerEnv } from '@bulkhead/core';
import manifest from '../package.json' with { type: 'json' };

/** The port when `PORT` is unset: the manifest's (`bulkhead.port` in package.json), written nowhere else. */
export const DEFAULT_PORT = manifest.bulkhead.port;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ServerEnv {
  return parseEnv(serverEnvSchema(DEFAULT_PORT), env);
}
