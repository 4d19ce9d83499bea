import { parseEnv, serverEnvSchema, type ServerEnv } from '@bulkhead/core';

/** admin's port when `PORT` is unset. */
export const DEFAULT_PORT = 3101;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ServerEnv {
  return parseEnv(serverEnvSchema(DEFAULT_PORT), env);
}
