import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { addressProblem } from '../approvals/email.ts';
import { shownUrl } from '../pipeline/observability/shown-url.ts';

/** Whether `zone` is a time zone this Node knows (an IANA name such as Europe/Berlin). */
function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** A bad environment: one line per problem, ready to print before exiting. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  }
}

/** The workspace root (the folder holding pnpm-workspace.yaml) above `from`, or `from` itself. */
export function workspaceRoot(from = process.cwd()): string {
  let dir = resolve(from);
  for (;;) {
    if (existsSync(join(dir, 'pnpm-workspace.yaml'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(from);
    dir = parent;
  }
}

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** `true`/`false` (also `1`/`0`, `yes`/`no`). */
export const boolEnv = bool;

/** Variables every deployable understands (database and logging). */
export const baseEnvShape = {
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }).optional(),
  BULKHEAD_DATA_DIR: z.string().min(1).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** The OpenTelemetry collector (OTLP over HTTP): spans are exported when this or the next is set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** The full traces URL (wins over `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  /** `key=value,…` sent with every export (a collector's API key). */
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  /** The `service.name` of the spans; the deployable's name by default. */
  OTEL_SERVICE_NAME: z.string().min(1).max(200).optional(),
  /** Which traces are recorded, by OpenTelemetry's names; `parentbased_always_on` by default. */
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on'),
  /** The ratio of the `traceidratio` samplers, from 0 to 1 (default 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
};

/** The environment of an MCP server. `defaultPort` is the server's fixed port (admin 3101, customer 3102, dev-knowledge 3103). */
export function serverEnvSchema(defaultPort: number) {
  return z
    .object({
      ...baseEnvShape,
      HOST: z.string().min(1).default('127.0.0.1'),
      PORT: z.coerce.number().int().min(0).max(65535).default(defaultPort),
      BULKHEAD_PUBLIC_URL: z.url().optional(),
      BULKHEAD_TOKEN: z.string().optional(),
      BULKHEAD_ALLOWED_ORIGINS: list.optional(),
      BULKHEAD_ALLOWED_HOSTS: list.optional(),
      BULKHEAD_MAX_BODY_BYTES: z.coerce
        .number()
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .default(1024 * 1024),
      BULKHEAD_MIGRATE: bool.default(true),
      BULKHEAD_AUDIT_FULL_RESULTS: bool.default(false),
      /** The IANA time zone the company's policy reads the time of a call in (`context.time`). */
      BULKHEAD_POLICY_TIME_ZONE: z
        .string()
        .refine(isTimeZone, { message: 'must be an IANA time zone, e.g. Europe/Berlin or UTC' })
        .default('UTC'),
      BULKHEAD_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(600),
      /** Open 2025-11-25 tasks/result waits one token may hold; past it, tasks/result says to poll tasks/get. */
      BULKHEAD_TASK_RESULT_WAITS_PER_TOKEN: z.coerce.number().int().min(1).max(10_000).default(10),
      /** Open tasks/result waits one server process holds across all tokens. */
      BULKHEAD_TASK_RESULT_WAITS: z.coerce.number().int().min(1).max(100_000).default(200),
      BULKHEAD_APPROVAL_WEBHOOK_URL: z.url().optional(),
      BULKHEAD_CONSOLE_URL: z.url().optional(),
      /** The OAuth issuer (the console's URL) that grants tokens for this server; unset: no OAuth advertised. */
      BULKHEAD_AUTHORIZATION_SERVER: z.url().optional(),
      /** Run under the schema owner or a superuser (refused by default: each server runs under its own role). */
      BULKHEAD_ALLOW_OWNER_ROLE: bool.default(false),
      /** Where approved e-mails are sent: smtp://user:pass@host:587 (STARTTLS) or smtps://…:465 (TLS). */
      BULKHEAD_SMTP_URL: z.url({ protocol: /^smtps?$/ }).optional(),
      /** The From of every e-mail this deployment sends. */
      BULKHEAD_MAIL_FROM: z
        .string()
        .refine((v) => !addressProblem(v), {
          message: 'must be one plain address of the form name@domain.tld',
        })
        .optional(),
      /** Lets a scraper that is not on loopback read /metrics (Authorization: Bearer <token>). */
      BULKHEAD_METRICS_TOKEN: z.string().min(16).optional(),
    })
    .transform((env) => ({
      ...env,
      BULKHEAD_DATA_DIR: env.BULKHEAD_DATA_DIR ?? join(workspaceRoot(), '.bulkhead'),
      BULKHEAD_PUBLIC_URL: env.BULKHEAD_PUBLIC_URL ?? `http://${env.HOST}:${env.PORT}`,
    }));
}

export type ServerEnv = z.output<ReturnType<typeof serverEnvSchema>>;

/** How a bad value is echoed: never a secret, and a URL without its password. */
function shown(name: string, value: string): string {
  if (/KEY|TOKEN|SECRET|PASSWORD/i.test(name)) return `a value of ${value.length} characters, not shown`;
  return JSON.stringify(shownUrl(value));
}

/**
 * Parses `env` with `schema`; on failure throws a {@link ConfigError} naming
 * each variable, the value given and what is expected.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: Record<string, string | undefined>,
): z.output<S> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const name = issue.path.map(String).join('.');
      const given = cleaned[name];
      return `${name}: ${issue.message}${given === undefined ? '' : ` (got ${shown(name, given)})`}`;
    }),
  );
}
