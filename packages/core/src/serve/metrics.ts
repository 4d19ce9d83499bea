import { timingSafeEqual } from 'node:crypto';
import {
  SUCCESSFUL_OUTCOMES,
  UNSEALED_LIMIT_MS,
  type AuditEventInput,
  type AuditWriter,
  type Outcome,
} from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { MiddlewareHandler } from 'hono';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { UpstreamRecord } from '../pipeline/upstream/upstreams.ts';

/** What a deployable exposes on `/metrics` (Prometheus text format), one registry per app. */
export interface Metrics {
  registry: Registry;
  /** The audit writer, counting every event it writes: one per request, so requests by server, tool and outcome. */
  countingAuditWriter(audit: AuditWriter): AuditWriter;
  /** Counts one request to an upstream: by upstream and status, errors and refusals apart, and its latency. */
  upstream(record: UpstreamRecord): void;
}

/** Where the gauges read from on each scrape. */
export interface MetricsSources {
  server: string;
  sql: Sql;
  /** Pool size of `sql`. */
  poolMax: number;
  tokenCache?: { hits: number; misses: number };
  /** Gated servers report their approval queue; others have none. */
  approvals?: boolean;
  /** Age (ms) past which an unsealed audit event is overdue (default 10 minutes, as `audit verify` warns). */
  unsealedLimitMs?: number;
}

const REFUSALS = new Set(['unauthorized', 'forbidden', 'payload_too_large', 'bad_request', 'rate_limited']);

/**
 * The metrics of one deployable: requests by server, tool and outcome and their latency (from the
 * audit events, of which every request has exactly one), refusals by reason, token cache hits and
 * misses, the audit backlog (events not yet sealed, and the age of the oldest), the approval queue
 * (pending requests and the age of the oldest), and the database connections of this server's role.
 * Gauges that need the database are read when scraped, each in one short query.
 */
export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ server: sources.server });
  collectDefaultMetrics({ register: registry, prefix: 'bulkhead_' });
  // Registered in the order they are exposed.
  const db = databaseReader(registry, sources.sql);
  const count = requestMetrics(registry);
  if (sources.tokenCache) tokenCacheMetrics(registry, sources.tokenCache);
  auditBacklogMetrics(registry, sources, db.read);
  auditForwardMetrics(registry, sources.sql, db.read);
  if (sources.approvals) approvalQueueMetrics(registry, sources.sql, db.read);
  connectionMetrics(registry, sources, db);
  const upstream = upstreamMetrics(registry);
  const hold = heldEventMetrics(registry);
  return {
    registry,
    upstream,
    countingAuditWriter: (audit) => {
      hold(audit.held);
      return {
        ...audit,
        append: async (e) => {
          const stored = await audit.append(e);
          count(e);
          return stored;
        },
        appendIn: async (tx, e) => {
          const stored = await audit.appendIn(tx, e);
          count(e);
          return stored;
        },
        keep: async (e) => {
          await audit.keep(e);
          count(e);
        },
        check: () => audit.check(),
        flush: () => audit.flush(),
        held: audit.held,
      };
    },
  };
}

/** Reads the gauges that need the database, and says (in `bulkhead_db_up`) whether the last read could. */
interface DatabaseReader {
  read<T>(query: () => PromiseLike<T[]>): Promise<T[]>;
  /** Whether the last read reached the database. */
  up(): boolean;
}

/** `bulkhead_db_up`, and the reader the other database gauges go through. */
function databaseReader(registry: Registry, sql: Sql): DatabaseReader {
  // Gauges read from the database keep their last value when it is unreachable: a scrape during an
  // outage still answers, and says so in bulkhead_db_up.
  let databaseUp = true;
  const read = async <T>(query: () => PromiseLike<T[]>): Promise<T[]> => {
    try {
      const rows = await query();
      databaseUp = true;
      return rows;
    } catch {
      databaseUp = false;
      return [];
    }
  };
  new Gauge({
    name: 'bulkhead_db_up',
    help: 'Whether this scrape could read from the database (1) or not (0).',
    registers: [registry],
    async collect() {
      await read(() => sql`select 1`);
      this.set(databaseUp ? 1 : 0);
    },
  });
  return { read, up: () => databaseUp };
}

/** Outcomes that are no error (`error.type` stays unset). */
const OK_OUTCOMES: ReadonlySet<Outcome> = new Set(SUCCESSFUL_OUTCOMES);

/** Seconds: the buckets of every latency histogram, from 5 ms to the longest time limit. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Requests by tool and outcome, their latency, and refusals by reason; returns what counts one audit event. */
function requestMetrics(registry: Registry): (e: AuditEventInput) => void {
  const requests = new Counter({
    name: 'bulkhead_requests_total',
    help: 'Requests by tool (or method) and outcome; every request that reaches the server counts once.',
    labelNames: ['tool', 'outcome'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'bulkhead_request_duration_seconds',
    help: 'Time from a request arriving to its outcome, by tool (or method).',
    labelNames: ['tool'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  // OpenTelemetry's `mcp.server.operation.duration` (MCP semantic conventions), in Prometheus' spelling.
  const operation = new Histogram({
    name: 'mcp_server_operation_duration_seconds',
    help: 'MCP requests by the MCP semantic conventions: method, tool (a known one) and error type (the outcome, when not ok).',
    labelNames: ['mcp_method_name', 'gen_ai_tool_name', 'error_type'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'bulkhead_refusals_total',
    help: 'Requests refused before or instead of a tool, by outcome and reason.',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  });
  return (e) => {
    const tool = e.tool && e.method === 'tools/call' ? e.tool.slice(0, 64) : e.method.slice(0, 64);
    requests.inc({ tool, outcome: e.outcome });
    duration.observe({ tool }, e.durationMs / 1000);
    operation.observe(
      {
        mcp_method_name: e.method.slice(0, 64),
        // A name the client made up (an unknown tool) is no label: it would grow the series without bound.
        gen_ai_tool_name: e.method === 'tools/call' && e.outcome !== 'unknown_tool' ? (e.tool ?? '') : '',
        error_type: OK_OUTCOMES.has(e.outcome) ? '' : e.outcome,
      },
      e.durationMs / 1000,
    );
    if (REFUSALS.has(e.outcome)) {
      const reason = (e.resultSummary as { reason?: unknown } | null | undefined)?.reason;
      refusals.inc({ outcome: e.outcome, reason: typeof reason === 'string' ? reason.slice(0, 40) : 'none' });
    }
  };
}

/** Token cache hits and misses. */
function tokenCacheMetrics(registry: Registry, cache: NonNullable<MetricsSources['tokenCache']>): void {
  new Counter({
    name: 'bulkhead_token_cache_hits_total',
    help: 'Token checks answered from the in-process cache.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.hits);
    },
  });
  new Counter({
    name: 'bulkhead_token_cache_misses_total',
    help: 'Token checks that asked the database.',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.misses);
    },
  });
}

/** The audit backlog: events not yet sealed, the age of the oldest, and whether it is overdue. */
function auditBacklogMetrics(
  registry: Registry,
  sources: MetricsSources,
  read: DatabaseReader['read'],
): void {
  // One query a scrape answers the three backlog gauges: the registry collects them all at once, and
  // each awaits the same answer.
  const overdueAfter = (sources.unsealedLimitMs ?? UNSEALED_LIMIT_MS) / 1000;
  let backlog: Promise<{ unsealed: string; age: number | null } | undefined> | undefined;
  const readBacklog = () =>
    (backlog ??= read(
      () => sources.sql<{ unsealed: string; age: number | null }[]>`
        select unsealed, extract(epoch from now() - oldest_at)::float8 as age from bulkhead_audit_backlog()`,
    )
      .then(([row]) => row)
      .finally(() => (backlog = undefined)));
  new Gauge({
    name: 'bulkhead_audit_unsealed_events',
    help: 'Audit events not yet covered by a seal.',
    registers: [registry],
    async collect() {
      const row = await readBacklog();
      if (row) this.set(Number(row.unsealed));
    },
  });
  new Gauge({
    name: 'bulkhead_audit_unsealed_age_seconds',
    help: 'Age of the oldest audit event not yet covered by a seal (0 when there is none).',
    registers: [registry],
    async collect() {
      const row = await readBacklog();
      if (row) this.set(row.age ?? 0);
    },
  });
  new Gauge({
    name: 'bulkhead_audit_unsealed_overdue',
    help: `1 when the oldest audit event not yet covered by a seal is older than ${overdueAfter} s (the sealer stopped or is stalled), else 0.`,
    registers: [registry],
    async collect() {
      const row = await readBacklog();
      if (row) this.set((row.age ?? 0) > overdueAfter ? 1 : 0);
    },
  });
}

/**
 * The lag of forwarding to the SIEM, per destination the sealer forwards to: events sealed but not yet
 * acknowledged, and how long ago the oldest of them was sealed. No series while nothing is forwarded.
 */
function auditForwardMetrics(registry: Registry, sql: Sql, read: DatabaseReader['read']): void {
  type Lag = { destination: string; lag: string; age: number | null };
  // One query a scrape answers both gauges; undefined when the database could not be read, and then
  // both keep their last values, as the other gauges do.
  let lag: Promise<Lag[] | undefined> | undefined;
  const readLag = () =>
    (lag ??= read(() =>
      sql<Lag[]>`
        select destination, lag, extract(epoch from now() - oldest_at)::float8 as age
        from bulkhead_audit_forward_lag()`.then((rows) => [rows]),
    )
      .then(([rows]) => rows)
      .finally(() => (lag = undefined)));
  const gauge = (name: string, help: string, value: (r: Lag) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['destination'] as const,
      registers: [registry],
      async collect() {
        const rows = await readLag();
        if (!rows) return;
        this.reset();
        for (const r of rows) this.set({ destination: r.destination }, value(r));
      },
    });
  gauge(
    'bulkhead_audit_forward_lag_events',
    'Sealed audit events a SIEM destination has not acknowledged yet, by destination.',
    (r) => Number(r.lag),
  );
  gauge(
    'bulkhead_audit_forward_lag_seconds',
    'How long ago the oldest sealed audit event a SIEM destination has not acknowledged was sealed (0 when none), by destination.',
    (r) => r.age ?? 0,
  );
}

/** The approval queue: pending requests and the age of the oldest. */
function approvalQueueMetrics(registry: Registry, sql: Sql, read: DatabaseReader['read']): void {
  const pendingAge = new Gauge({
    name: 'bulkhead_approvals_pending_age_seconds',
    help: 'Age of the oldest request waiting for a person (0 when there is none).',
    registers: [registry],
  });
  new Gauge({
    name: 'bulkhead_approvals_pending',
    help: 'Requests waiting for a person (a server sees its own; the console, all).',
    registers: [registry],
    async collect() {
      const [row] = await read(
        () => sql<{ n: number; age: number | null }[]>`
          select count(*)::int as n, extract(epoch from now() - min(requested_at))::float8 as age
          from bulkhead_approvals where status = 'pending' and expires_at > now()`,
      );
      if (!row) return;
      this.set(row.n);
      pendingAge.set(row.age ?? 0);
    },
  });
}

/** The pool's size and the database sessions of this server's role, by state. */
function connectionMetrics(registry: Registry, sources: MetricsSources, db: DatabaseReader): void {
  new Gauge({
    name: 'bulkhead_db_pool_max',
    help: 'Connections the pool may open.',
    registers: [registry],
    collect() {
      this.set(sources.poolMax);
    },
  });
  const connections = new Gauge({
    name: 'bulkhead_db_connections',
    help: "Database sessions of this server's role, all replicas, by state.",
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const rows = await db.read(
        () => sources.sql<{ state: string; n: number }[]>`
          select coalesce(state, 'unknown') as state, count(*)::int as n from pg_stat_activity
          where usename = current_user and datname = current_database() group by 1`,
      );
      if (!db.up()) return;
      this.reset();
      for (const r of rows) connections.set({ state: r.state }, r.n);
    },
  });
}

/** Requests to upstreams by upstream and status, errors and refusals apart, and their latency; returns what counts one. */
function upstreamMetrics(registry: Registry): (r: UpstreamRecord) => void {
  const upstreamRequests = new Counter({
    name: 'bulkhead_upstream_requests_total',
    help: 'Requests to a declared upstream, by upstream, method and status class (2xx … 5xx, or none when it gave no answer).',
    labelNames: ['upstream', 'method', 'status'] as const,
    registers: [registry],
  });
  const upstreamErrors = new Counter({
    name: 'bulkhead_upstream_errors_total',
    help: 'Requests to an upstream that failed (no answer, 5xx) or that the kit refused (undeclared host, too large, too slow), by reason.',
    labelNames: ['upstream', 'reason'] as const,
    registers: [registry],
  });
  const upstreamDuration = new Histogram({
    name: 'bulkhead_upstream_request_duration_seconds',
    help: 'Time from a request to an upstream to the end of its answer, by upstream.',
    labelNames: ['upstream'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  return (r) => {
    const status = r.status === null ? 'none' : `${Math.floor(r.status / 100)}xx`;
    upstreamRequests.inc({ upstream: r.upstream, method: r.method, status });
    const reason =
      r.refused ?? (r.error ? 'unreachable' : r.status !== null && r.status >= 500 ? status : null);
    if (reason) upstreamErrors.inc({ upstream: r.upstream, reason });
    upstreamDuration.observe({ upstream: r.upstream }, r.ms / 1000);
  };
}

/** Audit events held in memory while the database is unreachable, and those dropped; returns what sets the hold they read. */
function heldEventMetrics(registry: Registry): (held: AuditWriter['held']) => void {
  let held: { waiting: number; dropped: number } = { waiting: 0, dropped: 0 };
  new Gauge({
    name: 'bulkhead_audit_held_events',
    help: 'Audit events of refusals answered while the database was unreachable, held in memory until it returns.',
    registers: [registry],
    collect() {
      this.set(held.waiting);
    },
  });
  new Gauge({
    name: 'bulkhead_audit_dropped_events',
    help: 'Audit events dropped because the hold for an unreachable database was full (since the start).',
    registers: [registry],
    collect() {
      this.set(held.dropped);
    },
  });
  return (h) => {
    held = h;
  };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * `GET /metrics`: open to loopback (a sidecar, or a scraper on the same host) and to a scraper that
 * presents the metrics token (`BULKHEAD_METRICS_TOKEN`); anyone else gets 404, as if there were none.
 */
export function metricsRoute(
  metrics: Metrics,
  token: string | undefined,
  source: (c: Parameters<MiddlewareHandler>[0]) => string,
): MiddlewareHandler {
  return async (c) => {
    const bearer = c.req.header('authorization')?.match(/^Bearer (\S+)$/i)?.[1];
    const allowed =
      LOOPBACK.has(source(c)) ||
      (token !== undefined &&
        bearer !== undefined &&
        bearer.length === token.length &&
        timingSafeEqual(Buffer.from(bearer), Buffer.from(token)));
    if (!allowed) return c.text('Not found.', 404);
    return c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType });
  };
}
