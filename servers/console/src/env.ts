import { join } from 'node:path';
import { baseEnvShape, parseEnv, workspaceRoot } from '@bulkhead/core';
import { z } from 'zod';

/** The console's port when `PORT` is unset. */
export const DEFAULT_PORT = 3100;

const schema = z
  .object({
    ...baseEnvShape,
    HOST: z.string().min(1).default('127.0.0.1'),
    PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
    /** The console's address as approvers reach it; https turns on Secure cookies. */
    BULKHEAD_PUBLIC_URL: z.url().optional(),
    /** Extra allowed `Host` names behind a proxy; loopback names are always allowed. */
    BULKHEAD_ALLOWED_HOSTS: z
      .string()
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean),
      )
      .optional(),
    BULKHEAD_MIGRATE: z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .transform((v) => v === 'true' || v === '1' || v === 'yes')
      .default(true),
    /** How long a sign-in lasts. */
    BULKHEAD_SESSION_HOURS: z.coerce.number().min(0.1).max(168).default(12),
  })
  .transform((env) => ({
    ...env,
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(workspaceRoot(), '.bulkhead'),
    BULKHEAD_PUBLIC_URL: env.BULKHEAD_PUBLIC_URL ?? `http://${env.HOST}:${env.PORT}`,
  }));

export type ConsoleEnv = z.output<typeof schema>;

/** The one place this deployable reads the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): ConsoleEnv {
  return parseEnv(schema, env);
}
