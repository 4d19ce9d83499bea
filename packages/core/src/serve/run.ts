import { serve } from '@hono/node-server';
import type { AuditWriter } from '@bulkhead/audit';
import type { Server as NodeServer } from 'node:http';
import { createSql, isConnectionError, type Sql } from '@bulkhead/db';
import { ConfigError, type ServerEnv } from './config.ts';
import { startApprovalExecutor } from '../approvals/executor.ts';
import type { SmtpOptions } from '../approvals/smtp.ts';
import {
  hasGatedTools,
  sendsEmail,
  type ServerDefinition,
} from '../pipeline/tool-definition/server-definition.ts';
import { createHttpApp } from './http-app.ts';
import { createLogger, type Logger } from '../pipeline/observability/logger.ts';
import { parseOtlpHeaders, startTracing } from './tracing.ts';
import { serveStdio, StartupError } from './stdio.ts';
import { connectFailure, openOwnDatabase, prepareDatabase } from './start-up.ts';
import type { UpstreamConfig, Upstreams } from '../pipeline/upstream/upstreams.ts';
import { createUpstreams } from '../pipeline/upstream/upstreams.ts';
import type { McpUpstreamConfig } from '../pipeline/mcp-upstream/connection.ts';
import { createMcpUpstreams, type McpUpstreams } from '../pipeline/mcp-upstream/upstreams.ts';

/** How a server process was started. */
export interface RunOptions {
  env: ServerEnv;
  /** `--stdio`: serve on stdin/stdout instead of HTTP. */
  stdio: boolean;
  /** The upstreams of the server's manifest, resolved by its `env.ts` (`resolveUpstreams`). */
  upstreams?: readonly UpstreamConfig[];
  /** The upstream MCP servers of its manifest (`bulkhead.mcpUpstream`), resolved by its `env.ts`. */
  mcpUpstreams?: readonly McpUpstreamConfig[];
  /** Per upstream MCP server, its tools not chosen when pinned (`pins.json`'s `others`): any other it lists is new. */
  mcpKnownTools?: Record<string, readonly string[]>;
  /**
   * The server's own grants (its `grants.sql`, read by `ownGrants(import.meta.url)` in its `main.ts`):
   * given to its group role on the embedded default, which it sets up for itself when it starts alone.
   */
  grantsSql?: string | null;
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
  const mcpUpstreams = createMcpUpstreams(run.mcpUpstreams ?? [], logger);
  // A lost connection is an outage of the moment, not a fault of the process: should one ever escape
  // unhandled (the postgres.js type fetch did, on a backend terminated while a connection opened), it is
  // logged and the server serves on; any other unhandled rejection still ends the process, as by default.
  process.on('unhandledRejection', (err) => {
    if (!isConnectionError(err)) throw err;
    logger.error({ err }, 'unhandled database connection error; serving on');
  });
  const self = {
    name: def.name,
    kind: 'mcp',
    gated: hasGatedTools(def),
    grantsSql: run.grantsSql ?? null,
  } as const;
  const db = await openOwnDatabase(self, env, { logger, max: POOL_MAX });
  const tracing = startTracing({
    endpoint: env.OTEL_EXPORTER_OTLP_ENDPOINT,
    tracesEndpoint: env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    headers: parseOtlpHeaders(env.OTEL_EXPORTER_OTLP_HEADERS),
    serviceName: env.OTEL_SERVICE_NAME ?? def.name,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerArg: env.OTEL_TRACES_SAMPLER_ARG,
  });
  // Closed last (closers run in reverse): the spans of the last calls and of the shutdown are exported.
  const closers: (() => Promise<unknown>)[] = [
    () => tracing.shutdown(),
    () => upstreams.close(),
    () => mcpUpstreams.close(),
  ];
  const reads = createSql(db.url, {
    max: READ_POOL_MAX,
    applicationName: `bulkhead-${def.name}`,
    readOnly: true,
  });
  closers.push(() => reads.end({ timeout: 5 }));
  const stop = createStop(closers, db, logger);
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
    // On stdio there is no read pool to check, and the log goes to the desktop client's stderr.
    await prepareDatabase(def.name, env, {
      sql: db.sql,
      reads: stdio ? undefined : reads,
      logger,
      quiet: stdio,
    });
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
      mcpUpstreams,
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
        policyTimeZone: env.BULKHEAD_POLICY_TIME_ZONE,
        upstreams,
        mcpUpstreams,
        ...(run.mcpKnownTools ? { mcpKnownTools: run.mcpKnownTools } : {}),
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

  const audit = await serveHttp(
    def,
    env,
    { sql: db.sql, reads, logger, upstreams, mcpUpstreams, known: run.mcpKnownTools },
    closers,
  );
  startExecutor(audit);
  logger.info({ url: `${env.BULKHEAD_PUBLIC_URL}/mcp` }, `${def.name} listening`);
}

/**
 * How a server stops, once (a second signal changes nothing): the `closers` in reverse order, then the
 * database, then exit with `code`.
 */
function createStop(
  closers: (() => Promise<unknown>)[],
  db: { close(): Promise<unknown> },
  logger: Logger,
): (code: number) => Promise<void> {
  let stopping = false;
  return async (code) => {
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
}

/** Where the approval notifications and the console's links point. */
function approvalUrls(env: ServerEnv) {
  return {
    approvalWebhookUrl: env.BULKHEAD_APPROVAL_WEBHOOK_URL,
    consoleUrl: env.BULKHEAD_CONSOLE_URL,
  };
}

/**
 * Serves `def` over HTTP once it listens, adds to `closers` how to stop it (the app, then the
 * listener, which lets in-flight requests finish), and returns the app's audit writer.
 */
async function serveHttp(
  def: ServerDefinition,
  env: ServerEnv,
  made: {
    sql: Sql;
    reads: Sql;
    logger: Logger;
    upstreams: Upstreams;
    mcpUpstreams: McpUpstreams;
    known: Record<string, readonly string[]> | undefined;
  },
  closers: (() => Promise<unknown>)[],
): Promise<AuditWriter> {
  const { sql, reads, logger, upstreams, mcpUpstreams, known } = made;
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
    policyTimeZone: env.BULKHEAD_POLICY_TIME_ZONE,
    ...approvalUrls(env),
    ...(env.BULKHEAD_ALLOWED_ORIGINS ? { allowedOrigins: env.BULKHEAD_ALLOWED_ORIGINS } : {}),
    ...(env.BULKHEAD_ALLOWED_HOSTS ? { allowedHosts: env.BULKHEAD_ALLOWED_HOSTS } : {}),
    metricsToken: env.BULKHEAD_METRICS_TOKEN,
    poolMax: POOL_MAX + READ_POOL_MAX,
    authorizationServer: env.BULKHEAD_AUTHORIZATION_SERVER,
    upstreams,
    ...(mcpUpstreams.byName.size ? { mcpUpstreams } : {}),
    ...(known ? { mcpKnownTools: known } : {}),
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
