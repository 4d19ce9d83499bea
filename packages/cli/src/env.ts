import { join } from 'node:path';
import { baseEnvShape, parseEnv, workspaceRoot } from '@bulkhead/core';
import { z } from 'zod';

const schema = z
  .object({
    ...baseEnvShape,
    LOG_LEVEL: baseEnvShape.LOG_LEVEL.unwrap().optional(),
    /** The approvers' console that `start` links from approval notifications. */
    BULKHEAD_CONSOLE_URL: z.url().optional(),
    /** Signs audit prune checkpoints; defaults to a key kept in the data dir. */
    BULKHEAD_AUDIT_KEY: z.string().min(16).optional(),
    /** Who is at the keyboard, recorded as `created_by` / `decided_by`. */
    BULKHEAD_OPERATOR: z.string().min(1).optional(),
    USER: z.string().optional(),
    /** Where the user ran `pnpm bulkhead` (pnpm runs the CLI in packages/cli); relative paths are resolved from here. */
    INIT_CWD: z.string().min(1).optional(),
    NO_COLOR: z.string().optional(),
  })
  .transform((env) => ({
    ...env,
    LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    /** The level `start` gives the servers it runs: the operator's LOG_LEVEL, else info. */
    serverLogLevel: env.LOG_LEVEL ?? 'info',
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(workspaceRoot(), '.bulkhead'),
    operator: env.BULKHEAD_OPERATOR ?? `cli:${env.USER ?? 'operator'}`,
    cwd: env.INIT_CWD ?? process.cwd(),
  }));

export type CliEnv = z.output<typeof schema> & { passthrough: Record<string, string | undefined> };

/** The CLI's one read of the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  // `start` hands the whole environment on to the servers it runs, which read their own variables.
  return { ...parseEnv(schema, env), passthrough: { ...env } };
}
