import { join } from 'node:path';
import { baseEnvShape, boolEnv, parseEnv } from '@bulkhead/core';
import { z } from 'zod';
import { repoRoot } from './root.ts';

const schema = z
  .object({
    ...baseEnvShape,
    LOG_LEVEL: baseEnvShape.LOG_LEVEL.unwrap().optional(),
    /** The approvers' console that `start` links from approval notifications. */
    BULKHEAD_CONSOLE_URL: z.url().optional(),
    /** `start` with it: the servers send approved e-mails there, and no local mail catcher runs. */
    BULKHEAD_SMTP_URL: z.url({ protocol: /^smtps?$/ }).optional(),
    /** The From `start` gives the servers (default <server>@bulkhead.test). */
    BULKHEAD_MAIL_FROM: z.string().min(3).optional(),
    /** Signs audit prune checkpoints; defaults to a key kept in the data dir. */
    BULKHEAD_AUDIT_KEY: z.string().min(16).optional(),
    /** A PEM Ed25519 private key: the sealer signs each seal with it as a checkpoint, checked with the public key. */
    BULKHEAD_AUDIT_SIGNING_KEY_FILE: z.string().min(1).optional(),
    /** An RFC 3161 time-stamping authority: the sealer has each signed checkpoint timestamped there. */
    BULKHEAD_AUDIT_TSA_URL: z.url({ protocol: /^https?$/ }).optional(),
    /** A syslog receiver (`tls://host:port`, RFC 5425): the sealer forwards every sealed event there. */
    BULKHEAD_AUDIT_SYSLOG_URL: z.url({ protocol: /^tls$/, hostname: /^.+$/ }).optional(),
    /** PEM certificates the syslog receiver's certificate must chain to (default: the system's). */
    BULKHEAD_AUDIT_SYSLOG_CA_FILE: z.string().min(1).optional(),
    /** A file the sealer appends every sealed event to, as OCSF API Activity events (JSON Lines). */
    BULKHEAD_AUDIT_OCSF_FILE: z.string().min(1).optional(),
    /** Who is at the keyboard, recorded as a token's `created_by`. */
    BULKHEAD_OPERATOR: z.string().min(1).optional(),
    /** The approver token `approvals approve|reject` decides with (or `--approver-token`). */
    BULKHEAD_APPROVER_TOKEN: z.string().min(1).optional(),
    /** A one-person shop: a person may approve what a token issued to them asked for. */
    BULKHEAD_ALLOW_SELF_APPROVAL: boolEnv.default(false),
    /** `start` on an external database: run every server under DATABASE_URL's role (development only). */
    BULKHEAD_ALLOW_OWNER_ROLE: boolEnv.default(false),
    /**
     * false: commands use the schema as it is instead of migrating first, for a role that may not
     * migrate (the audit sealer's CronJob; in a deployment the migration Job migrates).
     */
    BULKHEAD_MIGRATE: boolEnv.default(true),
    USER: z.string().optional(),
    /** Where the user ran `pnpm run …` (pnpm runs a script in its package); relative paths are resolved from here. */
    INIT_CWD: z.string().min(1).optional(),
    /**
     * `pnpm bulkhead …` runs the CLI with `pnpm exec` (the root has no `bulkhead` script, so pnpm
     * prints none of its own lines), which sets no INIT_CWD: with `--dir` it changes directory but
     * leaves the shell's PWD, where the user is. Read only under pnpm (PNPM_PACKAGE_NAME).
     */
    PWD: z.string().startsWith('/').optional(),
    PNPM_PACKAGE_NAME: z.string().optional(),
    NO_COLOR: z.string().optional(),
    /**
     * Where a server is reached, read as the server itself reads them, so that the
     * client configurations `tokens issue` prints name the URL the server really has.
     */
    BULKHEAD_PUBLIC_URL: z.url().optional(),
    HOST: z.string().min(1).optional(),
    PORT: z.coerce.number().int().min(1).max(65535).optional(),
    /**
     * Added to every server's manifest port: the default of `--port-offset` (start, tokens), and the
     * offset of every URL the CLI prints (`approvers add`'s sign-in link, `new server`'s next steps).
     */
    BULKHEAD_PORT_OFFSET: z.coerce.number().int().min(0).max(60_000).default(0),
  })
  .transform((env) => ({
    ...env,
    LOG_LEVEL: env.LOG_LEVEL ?? 'warn',
    /** The level `start` gives the servers it runs: the operator's LOG_LEVEL, else info. */
    serverLogLevel: env.LOG_LEVEL ?? 'info',
    BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(repoRoot, '.bulkhead'),
    operator: env.BULKHEAD_OPERATOR ?? `cli:${env.USER ?? 'operator'}`,
    cwd: env.INIT_CWD ?? (env.PNPM_PACKAGE_NAME !== undefined ? env.PWD : undefined) ?? process.cwd(),
  }));

export type CliEnv = z.output<typeof schema> & { passthrough: Record<string, string | undefined> };

/** The CLI's one read of the environment. */
export function loadEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  // `start` hands the whole environment on to the servers it runs, which read their own variables.
  return { ...parseEnv(schema, env), passthrough: { ...env } };
}
