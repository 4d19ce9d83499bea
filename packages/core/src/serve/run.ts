import { serve } from '@hono/node-server';
import type { AuditWriter } from '@bulkhead/audit';
import type { Server as NodeServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import {
  connectedAsOwner,
  createSql,
  isConnectionError,
  openDatabase,
  roleSpecs,
  sessionHazards,
  type Sql,
} from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';

type ReservedSql = Awaited<ReturnType<Sql['reserve']>>;
import { ConfigError, workspaceRoot, type ServerEnv } from './config.ts';
import { startApprovalExecutor } from '../approvals/executor.ts';
import type { SmtpOptions } from '../approvals/smtp.ts';
import { hasGatedTools, sendsEmail, type ServerDefinition } from '../pipeline/server-definition.ts';
import { createHttpApp } from './http-app.ts';
import { readySchema } from './schema.ts';
import { POOLER_NEEDS, SESSIONS_SHARED } from './pooler.ts';
import { createLogger, type Logger } from '../pipeline/logger.ts';
import { parseOtlpHeaders, startTracing } from './tracing.ts';
import { serveStdio, StartupError } from './stdio.ts';
import type { UpstreamConfig, Upstreams } from '../pipeline/upstream/upstreams.ts';
import { createUpstreams } from '../pipeline/upstream/upstreams.ts';

/** How a server process was started. */
export interface RunOptions {
  env: ServerEnv;
  /** `--stdio`: serve on stdin/stdout instead of HTTP. */
  stdio: boolean;
  /** The upstreams of the server's manifest, resolved by its `env.ts` (`resolveUpstreams`). */
  upstreams?: readonly UpstreamConfig[];
}

/**
 * Connections of a server's main pool. A call that may change something holds one for its transaction
 * and never waits on another while it does (its audit event goes into that transaction); token checks
 * (on a cache miss), the rate-limit exchange, group-committed events and the approval executor take
 * one each for one statement.
 */
export const POOL_MAX = 6;

/**
 * Connections of a server's read pool, opened read-only and served as lanes (`createReadLanes`): the
 * read-only calls of one customer share a lane, then write their events through the main pool. With
 * the main pool, twelve per process: they serve a 2-core database well; more only queue there.
 */
export const READ_POOL_MAX = 6;

/** How long a stopping server waits for its shutdown steps before it exits anyway. */
const SHUTDOWN_LIMIT_MS = 20_000;

/** How long in-flight requests may take to finish once the server is asked to stop. */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Refuses to serve under a role that is not this deployable's own: the schema
 * owner or a superuser (unless allowed, for a one-off) could do anything the
 * database otherwise refuses, and another deployable's role would run this
 * server with the wrong rights.
 */
export async function checkRole(sql: Sql, deployable: string, allowOwner: boolean): Promise<string> {
  const who = await connectedAsOwner(sql);
  if (who.owner) {
    if (allowOwner)
      return `running as ${who.role}, the schema owner or a superuser (BULKHEAD_ALLOW_OWNER_ROLE=true)`;
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which owns the schema or is a superuser; run ${deployable} under its own role ` +
        `(\`pnpm bulkhead db roles --login ${deployable} <login-role>\`), or set BULKHEAD_ALLOW_OWNER_ROLE=true to allow it (not for production)`,
    );
  }
  if (who.deployable !== deployable)
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which ${who.deployable ? `is the role of ${who.deployable}` : 'belongs to no deployable'}, not of ${deployable}: ` +
        `make it a member of its group role with \`pnpm bulkhead db roles --login ${deployable} ${who.role}\``,
    );
  // What a session of this role could change about its own sessions is what the database's checks rest on.
  const hazards = await sessionHazards(sql);
  if (hazards.length)
    throw new StartupError(
      `connected to PostgreSQL as "${who.role}", which can change what the database's checks assume: ${hazards.join('; ')}`,
    );
  return `running as ${who.role} (${deployable})`;
}

/**
 * A start-up step that could not connect, as one sentence: which role, what PostgreSQL said, and, when
 * no connection was left (53300: the login role's `CONNECTION LIMIT` or the server's `max_connections`
 * used up), what to do; `holds` is how many connections one such process holds at most. Any other error
 * is returned as it is.
 */
export function connectFailure(err: unknown, url: string, deployable: string, holds: number): unknown {
  if (err instanceof StartupError || !isConnectionError(err)) return err;
  let role = '';
  try {
    role = decodeURIComponent(new URL(url).username);
  } catch {
    // not a URL: say nothing of the role
  }
  const message = err instanceof Error ? err.message : String(err);
  const full = (err as { code?: unknown }).code === '53300';
  return new StartupError(
    `could not connect to PostgreSQL${role ? ` as "${role}"` : ''}: ${message}` +
      (full
        ? ` (the login role's CONNECTION LIMIT or PostgreSQL's max_connections is used up; one ${deployable} process holds up to ${holds}). ` +
          `Raise the login's limit (\`bulkhead db roles --login ${deployable} ${role || '<login-role>'} --connection-limit N\`) ` +
          "or PostgreSQL's max_connections, or run fewer replicas"
        : '; check DATABASE_URL and that PostgreSQL is up'),
  );
}

export { POOLER_NEEDS } from './pooler.ts';

/**
 * Refuses a connection pooler that does not give each connection a session of its own (PgBouncer in
 * transaction or statement mode), and one that refuses the read pool's startup parameter
 * (`default_transaction_read_only`): either would have calls fail while `/readyz` may say ready.
 *
 * The probe: on two connections of the main pool, each reserved, the first sets a session setting to
 * a value of its own, the second sets the same setting to another, and the first reads it back with
 * its backend's pid — three rounds. On a session of its own the value and the pid are the ones the
 * first statement saw; behind a transaction pooler a later statement runs on whatever server
 * connection is free (often the one the other connection just used), so one of them differs. Its
 * statements are unnamed (`prepare: false`): a named one would fail behind such a pooler
 * ("prepared statement … does not exist") instead of telling.
 */
export async function checkPooler(sql: Sql, reads?: Sql): Promise<void> {
  // Both settled before going on: when one connection is refused (the login's limit reached), the other is
  // released rather than kept reserved, and nothing is still connecting when the process stops.
  const reserved = await Promise.allSettled([sql.reserve(), sql.reserve()]);
  const refused = reserved.find((r) => r.status === 'rejected');
  if (refused) {
    for (const r of reserved) if (r.status === 'fulfilled') r.value.release();
    throw refused.reason;
  }
  const [a, b] = reserved.map((r) => (r as PromiseFulfilledResult<ReservedSql>).value) as [
    ReservedSql,
    ReservedSql,
  ];
  try {
    const once = async (c: typeof a, text: string, params: string[] = []) =>
      (await c.unsafe<{ pid: number; value: string | null }[]>(text, params, { prepare: false }))[0]!;
    for (let round = 0; round < 3; round++) {
      const mark = randomUUID();
      const set = await once(
        a,
        `select pg_backend_pid() as pid, set_config('bulkhead.pool_probe', $1, false) as value`,
        [mark],
      );
      await once(b, `select pg_backend_pid() as pid, set_config('bulkhead.pool_probe', $1, false) as value`, [
        randomUUID(),
      ]);
      const read = await once(
        a,
        `select pg_backend_pid() as pid, current_setting('bulkhead.pool_probe', true) as value`,
      );
      if (read.pid !== set.pid || read.value !== mark) throw new StartupError(SESSIONS_SHARED);
    }
  } catch (err) {
    if (err instanceof StartupError) throw err;
    // Only a pooler loses named statements between two statements of one connection.
    if ((err as { code?: unknown }).code === '26000') throw new StartupError(SESSIONS_SHARED);
    throw err;
  } finally {
    a.release();
    b.release();
  }
  if (!reads) return;
  try {
    await reads.unsafe('select 1', [], { prepare: false });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // PgBouncer: "unsupported startup parameter: default_transaction_read_only".
    if (/startup parameter/i.test(message))
      throw new StartupError(
        `DATABASE_URL leads to a connection pooler that refuses the read pool's startup parameter (${message}): ${POOLER_NEEDS}`,
      );
    throw err;
  }
}

/**
 * Where a server that sends e-mail sends it. Such a server does not start without an SMTP server
 * and a From: an approved e-mail that no one can send would look sent to the person who approved it.
 */
export function smtpOptions(def: ServerDefinition, env: ServerEnv): SmtpOptions | undefined {
  if (!sendsEmail(def)) return undefined;
  const tools = def.catalog.tools.filter((t) => t.approval?.sends?.includes('email')).map((t) => t.name);
  const why = `${def.name} sends e-mail (${tools.join(', ')}) once a person approves it`;
  const problems = [
    ...(env.BULKHEAD_SMTP_URL
      ? []
      : [
          `BULKHEAD_SMTP_URL is not set: ${why}; set it to the SMTP server to send through (smtp://user:pass@host:587 or smtps://user:pass@host:465; pnpm start sets it to its local mail catcher)`,
        ]),
    ...(env.BULKHEAD_MAIL_FROM
      ? []
      : [`BULKHEAD_MAIL_FROM is not set: ${why}; set it to the address it sends from (billing@example.com)`]),
  ];
  if (problems.length) throw new ConfigError(problems);
  return { url: env.BULKHEAD_SMTP_URL!, from: env.BULKHEAD_MAIL_FROM! };
}

/**
 * Everything a server's `main.ts` does: open the database (on the embedded
 * default, under this server's own login role, created on the way, the schema
 * migrated by the embedded server's superuser first), check that the schema is
 * current, check the role, serve over HTTP or stdio, run approved actions when a tool
 * is gated, and shut down cleanly on SIGINT/SIGTERM: stop accepting, let
 * in-flight calls finish (up to 10 s), stop the executor, write what the audit
 * path still holds, close the pool, exit 0.
 */
export async function runServer(def: ServerDefinition, { env, stdio, ...run }: RunOptions): Promise<void> {
  const smtp = smtpOptions(def, env);
  const logger = createLogger({ level: env.LOG_LEVEL, name: def.name, stderr: stdio });
  const upstreams = createUpstreams(run.upstreams);
  // A lost connection is an outage of the moment, not a fault of the process: should one ever escape
  // unhandled (the postgres.js type fetch did, on a backend terminated while a connection opened), it is
  // logged and the server serves on; any other unhandled rejection still ends the process, as by default.
  process.on('unhandledRejection', (err) => {
    if (!isConnectionError(err)) throw err;
    logger.error({ err }, 'unhandled database connection error; serving on');
  });
  const db = await openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: `bulkhead-${def.name}`,
    max: POOL_MAX,
    log: (line) => logger.info(line),
    deployable: { name: def.name, roles: roleSpecs(discoverDeployables(workspaceRoot())) },
  });
  const tracing = startTracing({
    endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    tracesEndpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    headers: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: env.OTEL_SERVICE_NAME ?? def.name,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerArg: env.OTEL_TRACES_SAMPLER_ARG,
  });
  // Closed last (closers run in reverse): the spans of the last calls and of the shutdown are exported.
  const closers: (() => Promise<unknown>)[] = [() => tracing.shutdown(), () => upstreams.close()];
  const reads = createSql(db.url, {
    max: READ_POOL_MAX,
    applicationName: `bulkhead-${def.name}`,
    readOnly: true,
  });
  closers.push(() => reads.end({ timeout: 5 }));
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    // A step that never finishes (a connection a broken pooler holds, a lane that waits on it) must not
    // keep a stopped server alive: after SHUTDOWN_LIMIT_MS it exits anyway, below an orchestrator's
    // grace period (Kubernetes: 30 s), saying so.
    setTimeout(() => {
      logger.error(
        { limitMs: SHUTDOWN_LIMIT_MS },
        'shutdown did not finish in time: exiting without waiting further',
      );
      logger.flush?.();
      process.exit(code);
    }, SHUTDOWN_LIMIT_MS).unref();
    for (const close of closers.reverse())
      await close().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
    await db.close().catch((err: unknown) => logger.error({ err }, 'closing the database failed'));
    logger.debug('stopped');
    logger.flush?.();
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  /** A start-up step that failed: a `StartupError` is one sentence on stderr and exit 1; anything else is thrown on. */
  const startupFailed = async (err: unknown): Promise<never> => {
    err = connectFailure(err, db.url, def.name, POOL_MAX + READ_POOL_MAX + 1);
    if (err instanceof StartupError) {
      process.stderr.write(`${def.name}: ${err.message}\n`);
      await stop(1);
    }
    throw err;
  };

  try {
    await prepareDatabase(def, env, logger, { sql: db.sql, reads, stdio });
  } catch (err) {
    await startupFailed(err);
  }

  const startExecutor = (audit?: AuditWriter) => {
    // Every process serving a gated server runs approved actions; replicas share the work safely.
    if (!hasGatedTools(def)) return;
    const executor = startApprovalExecutor(def, {
      sql: db.sql,
      logger,
      webhookUrl: env.BULKHEAD_APPROVAL_WEBHOOK_URL,
      upstreams,
      smtp,
      ...(audit ? { audit } : {}),
    });
    closers.push(() => executor.stop());
  };

  if (stdio) {
    try {
      const handle = await serveStdio(def, {
        sql: db.sql,
        logger,
        token: env.BULKHEAD_TOKEN,
        auditFullResults: env.BULKHEAD_AUDIT_FULL_RESULTS,
        upstreams,
        ...approvalUrls(env),
      });
      closers.push(() => handle.close());
      startExecutor();
      process.stdin.once('end', () => void stop(0));
      logger.info('serving over stdio');
    } catch (err) {
      await startupFailed(err);
    }
    return;
  }

  const audit = await serveHttp(def, env, { sql: db.sql, reads, logger, upstreams }, closers);
  startExecutor(audit);
  logger.info({ url: `${env.BULKHEAD_PUBLIC_URL}/mcp` }, `${def.name} listening`);
}

/** Where the approval notifications and the console's links point. */
function approvalUrls(env: ServerEnv) {
  return {
    approvalWebhookUrl: env.BULKHEAD_APPROVAL_WEBHOOK_URL,
    consoleUrl: env.BULKHEAD_CONSOLE_URL,
  };
}

/**
 * Readies the database for serving, or fails the start: checks for a pooler (on the read pool too,
 * unless on stdio, which has none), checks that the schema is current (migrating it only as an allowed
 * owner, never under the server's own role), and checks the role.
 */
async function prepareDatabase(
  def: ServerDefinition,
  env: ServerEnv,
  logger: Logger,
  { sql, reads, stdio }: { sql: Sql; reads: Sql; stdio: boolean },
): Promise<void> {
  // First: behind a pooler that loses sessions, even the migration's lock would not hold.
  await checkPooler(sql, stdio ? undefined : reads);
  const applied = await readySchema(sql, {
    deployable: def.name,
    migrate: env.BULKHEAD_MIGRATE,
    allowOwner: env.BULKHEAD_ALLOW_OWNER_ROLE,
  });
  if (applied.length) logger.info({ applied }, 'migrations applied');
  // On stdio the log goes to the desktop client's stderr: keep it to what matters there.
  const role = await checkRole(sql, def.name, env.BULKHEAD_ALLOW_OWNER_ROLE);
  if (stdio) logger.debug(role);
  else logger.info(role);
}

/**
 * Serves `def` over HTTP once it listens, adds to `closers` how to stop it (the app, then the
 * listener, which lets in-flight requests finish), and returns the app's audit writer.
 */
async function serveHttp(
  def: ServerDefinition,
  env: ServerEnv,
  { sql, reads, logger, upstreams }: { sql: Sql; reads: Sql; logger: Logger; upstreams: Upstreams },
  closers: (() => Promise<unknown>)[],
): Promise<AuditWriter> {
  const http = createHttpApp(def, {
    sql,
    reads,
    logger,
    publicUrl: env.BULKHEAD_PUBLIC_URL,
    maxBodyBytes: env.BULKHEAD_MAX_BODY_BYTES,
    rateLimitPerMinute: env.BULKHEAD_RATE_LIMIT_PER_MINUTE,
    taskResultWaits: {
      perToken: env.BULKHEAD_TASK_RESULT_WAITS_PER_TOKEN,
      total: env.BULKHEAD_TASK_RESULT_WAITS,
    },
    auditFullResults: env.BULKHEAD_AUDIT_FULL_RESULTS,
    ...approvalUrls(env),
    ...(env.BULKHEAD_ALLOWED_ORIGINS ? { allowedOrigins: env.BULKHEAD_ALLOWED_ORIGINS } : {}),
    ...(env.BULKHEAD_ALLOWED_HOSTS ? { allowedHosts: env.BULKHEAD_ALLOWED_HOSTS } : {}),
    metricsToken: env.BULKHEAD_METRICS_TOKEN,
    poolMax: POOL_MAX + READ_POOL_MAX,
    authorizationServer: env.BULKHEAD_AUTHORIZATION_SERVER,
    upstreams,
  });
  const server = serve({ fetch: http.app.fetch, port: env.PORT, hostname: env.HOST }) as NodeServer;
  // A response counts until its last byte is sent: a call answered as an event stream outlives the handler.
  let inFlight = 0;
  server.on('request', (_req, res) => {
    inFlight++;
    res.once('close', () => inFlight--);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  closers.push(
    async () => {
      await http.close();
      const { waiting, dropped } = http.audit.held;
      if (waiting || dropped)
        logger.error(
          { waiting, dropped },
          'audit events answered while the database was unreachable could not be written before stopping',
        );
    },
    async () => {
      // Stop accepting; answer what is in flight (up to the grace period), then close what is left.
      const closed = new Promise((resolve) => server.close(resolve));
      http.endStreams();
      server.closeIdleConnections();
      const deadline = Date.now() + SHUTDOWN_GRACE_MS;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      if (inFlight > 0) logger.warn({ inFlight }, 'stopping with requests still in flight');
      server.closeAllConnections();
      await closed;
    },
  );
  return http.audit;
}
