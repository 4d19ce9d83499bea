// The HTTP app, wired: the guards (serve/http/<guard>/, each a middleware with its test) in the order a
// request meets them, the MCP adapter behind them (serve/http/mcp-adapter/), the probes (serve/http/probes/),
// and one onError (serve/http/answer-error.ts) that answers and audits every refusal.
import { Hono, type Context } from 'hono';
import { createAuditWriter, type AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { ApprovalRecord } from '../approvals/store.ts';
import type { ApprovalRequester, CallKit } from '../pipeline/call/call-tool.ts';
import { approvalsFor } from '../approvals/requester.ts';
import { hasGatedTools, type ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit.ts';
import { createReadLanes } from '../pipeline/database/read-lanes.ts';
import { SESSIONS_SHARED } from './pooler.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';
import { watchPolicy } from './policy-watch.ts';
import { createToolSwitches } from './tool-switches.ts';
import { bearerAuth } from './http/bearer-auth/index.ts';
import { declaredBodySize } from './http/body-size/index.ts';
import { cors } from './http/cors/index.ts';
import { allowedHostsAndOrigins, hostAndOrigin } from './http/host-origin/index.ts';
import { jsonBody } from './http/json-body/index.ts';
import { mcpHandler, serveMcp } from './http/mcp-adapter/index.ts';
import { noGetStream } from './http/no-get-stream/index.ts';
import { mountProbes } from './http/probes/index.ts';
import { batchRateLimit, rateLimit } from './http/rate-limit/index.ts';
import { requestContext } from './http/request-context/index.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { answerError } from './http/answer-error.ts';
import { createRefusalLog, type RefusalLog } from './http/refusal-log.ts';
import { createCancellations } from './http/cancellations.ts';
import type { McpEnv } from './http/state.ts';
import { createResultWaits, type ResultWaitLimits } from '../tasks/result-waits.ts';
import { createListenStreams, type ListenStreamOptions } from './listen-streams.ts';
import type { Upstreams } from '../pipeline/upstream/upstreams.ts';
import type { McpUpstreams } from '../pipeline/mcp-upstream/upstreams.ts';
import { createPinWatch, withWithheld, type PinWatch } from '../pipeline/mcp-upstream/pin-watch.ts';
import { mcpDriftMetrics } from './mcp-drift-metrics.ts';

/** What serving a definition over HTTP needs. */
export interface HttpAppOptions {
  sql: Sql;
  /**
   * A pool opened read-only (`createSql(url, { readOnly: true })`) for read-only tool calls alone,
   * served as lanes (`createReadLanes`). Closed by its owner, not by the app.
   */
  reads?: Sql;
  logger: Logger;
  /** The server's canonical URL (`BULKHEAD_PUBLIC_URL`); its host and origin are always allowed. */
  publicUrl: string;
  /** Extra allowed `Origin` values; loopback origins are always allowed. */
  allowedOrigins?: string[];
  /** Extra allowed `Host` names; loopback names are always allowed. */
  allowedHosts?: string[];
  /** Largest accepted request body (default 1 MiB). */
  maxBodyBytes?: number;
  /**
   * Caps on open 2025-11-25 `tasks/result` waits, per token and in this process
   * (`BULKHEAD_TASK_RESULT_WAITS_PER_TOKEN`, `BULKHEAD_TASK_RESULT_WAITS`; default 10 and 200).
   */
  taskResultWaits?: ResultWaitLimits;
  /**
   * Caps on open 2026-07-28 `subscriptions/listen` streams, per token and in this process (default 10
   * and 200), and how often their tokens are checked again for expiry (default 30 s).
   */
  listenStreams?: ListenStreamOptions;
  /** Requests per token per minute; 0 switches the limit off (default 600). */
  rateLimitPerMinute?: number;
  /** How often replicas exchange rate-limit counts (default 1 s). */
  rateLimitSyncMs?: number;
  /** Unauthenticated refusals audited one by one per source address and minute; the rest are summarised (default 20). */
  unauthenticatedEventsPerMinute?: number;
  auditFullResults?: boolean;
  audit?: AuditWriter;
  verifier?: TokenVerifier;
  /** Files gated calls; created automatically when the server has a gated tool. */
  approvals?: ApprovalRequester<ApprovalRecord>;
  /** `BULKHEAD_APPROVAL_WEBHOOK_URL`: approval requests are also sent there. */
  approvalWebhookUrl?: string | undefined;
  /** `BULKHEAD_CONSOLE_URL`: where approvers decide, linked from notifications. */
  consoleUrl?: string | undefined;
  /** `BULKHEAD_METRICS_TOKEN`: lets a scraper that is not on loopback read `/metrics`. */
  metricsToken?: string | undefined;
  /** The size of `sql`'s pool, reported on `/metrics` (default 10). */
  poolMax?: number;
  /**
   * `BULKHEAD_AUTHORIZATION_SERVER`: the issuer of the OAuth authorization server (the console) that
   * grants tokens for this server. When set, the server publishes its protected-resource metadata
   * (RFC 9728) and names it in every 401, so that a client can get a token by OAuth.
   */
  authorizationServer?: string | undefined;
  /** The upstreams the server declares (`bulkhead.upstreams`, see `resolveUpstreams`); counted on `/metrics`. */
  upstreams?: Upstreams;
  /**
   * The upstream MCP servers the server declares (`bulkhead.mcpUpstream`): connected when the app is
   * made, reported apart on `/readyz`, their calls counted on `/metrics`. Closed by their owner.
   */
  mcpUpstreams?: McpUpstreams;
  /** Per upstream MCP server, its tools not chosen when it was pinned (`pins.json`'s `others`): any other is new. */
  mcpKnownTools?: Record<string, readonly string[]>;
  /** How often the switched-off tools are read again whatever was announced (default 1000 ms). */
  toolSwitchRefreshMs?: number;
  /** `BULKHEAD_POLICY_TIME_ZONE`: the time zone the policy's `context.time` is given in (default UTC). */
  policyTimeZone?: string | undefined;
}

/** A served server: the Hono app and how to release what it holds. */
export interface HttpApp {
  app: Hono<McpEnv>;
  verifier: TokenVerifier;
  limiter: RateLimiter;
  /** The audit writer the app writes with (counted on `/metrics`); the approval executor writes with it too. */
  audit: AuditWriter;
  metrics: Metrics;
  /** Ends the open `subscriptions/listen` streams (they never end by themselves): the first step of a shutdown. */
  endStreams(): void;
  /** The watch of the pins of tools served from upstream MCP servers (when it declares one). */
  pins?: PinWatch;
  close(): Promise<void>;
}

/** The watch of the pins of a server in front of upstream MCP servers (none without them). */
function watchPins(
  def: ServerDefinition,
  options: HttpAppOptions,
  audit: AuditWriter,
  metrics: Metrics,
): PinWatch | undefined {
  if (!options.mcpUpstreams) return undefined;
  return createPinWatch({
    server: def.name,
    tools: def.catalog.tools,
    upstreams: options.mcpUpstreams,
    sql: options.sql,
    audit,
    logger: options.logger,
    ...(options.mcpKnownTools ? { known: options.mcpKnownTools } : {}),
    ...mcpDriftMetrics(metrics.registry),
  });
}

/**
 * The HTTP face of a server: `POST /mcp` (Streamable HTTP, 2026-07-28 and the
 * 2025-era stateless fallback), `GET /healthz`, `GET /readyz`. Before the MCP
 * layer sees a request it passes a row of guards, one a middleware: request
 * context → Host and Origin (the SDK's validators) → CORS → `GET` answered 405
 * (no event stream is offered; housekeeping, no event) → declared body size
 * → bearer token (audience = this server) → rate limit for the token → body
 * read, parsed and classified (tool arguments held to structural limits) →
 * the rest of a batch's rate-limit units, one a message. A guard refuses by
 * throwing a `Refusal`, which `onError` answers and audits. Every request
 * that reaches the server yields
 * one audit event — refusals, unsupported methods, malformed calls, the MCP
 * layer's own rejections — except the housekeeping docs/tests.md lists.
 */
export function createHttpApp(def: ServerDefinition, options: HttpAppOptions): HttpApp {
  const { sql, logger } = options;
  const switches = createToolSwitches(sql, def.name, { refreshMs: options.toolSwitchRefreshMs });
  const policy = watchPolicy(sql, logger, { timeZone: options.policyTimeZone });
  const verifier = options.verifier ?? createTokenVerifier(sql, def.name);
  const metrics = createMetrics({
    server: def.name,
    sql,
    poolMax: options.poolMax ?? 10,
    tokenCache: verifier.stats,
    approvals: hasGatedTools(def),
  });
  // Every request yields one audit event: counting them gives requests by tool and outcome.
  const audit = metrics.countingAuditWriter(options.audit ?? createAuditWriter(sql));
  const limiter = createRateLimiter(sql, options.rateLimitPerMinute ?? 600, {
    ...(options.rateLimitSyncMs ? { syncIntervalMs: options.rateLimitSyncMs } : {}),
  });
  const refusals: RefusalLog = createRefusalLog(audit, def.name, logger, {
    ...(options.unauthenticatedEventsPerMinute !== undefined
      ? { perSourcePerMinute: options.unauthenticatedEventsPerMinute }
      : {}),
  });
  const cancellations = createCancellations();
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const publicUrl = new URL(options.publicUrl);
  options.upstreams?.observe(metrics.upstream);
  const reads = options.reads
    ? createReadLanes(options.reads, options.reads.options.max, {
        onSessionMoved: (err) => logger.error({ err }, `a read lane's session moved: ${SESSIONS_SHARED}`),
      })
    : undefined;
  const pins = watchPins(def, options, audit, metrics);
  const kit: CallKit<ApprovalRecord> = {
    server: def.name,
    catalog: def.catalog,
    sql,
    ...(reads ? { reads } : {}),
    logger,
    audit,
    auditFullResults: options.auditFullResults ?? false,
    ...(options.upstreams ? { upstreams: options.upstreams } : {}),
    ...(options.mcpUpstreams ? { mcpUpstreams: options.mcpUpstreams } : {}),
    ...(pins ? { pins } : {}),
    switchedOff: pins ? withWithheld(switches, pins) : switches,
    policy,
    ...approvalsFor(def, options),
  };
  const mcp = mcpHandler(def, kit, cancellations, createResultWaits(options.taskResultWaits), maxBody);
  // Open 2026-07-28 `subscriptions/listen` streams on this replica hear of a switch at once.
  switches.onChange(() => mcp.handler.notify.toolsChanged());
  // So do they when a pinned upstream tool is withheld for drift, or served again once accepted.
  pins?.onChange(() => mcp.handler.notify.toolsChanged());

  const app = new Hono<McpEnv>();
  options.mcpUpstreams?.start();
  const metadataUrl = mountProbes(app, def, options, { reads, metrics, publicUrl });
  const { hosts, origins } = allowedHostsAndOrigins(publicUrl, options);
  app.use('/mcp', requestContext(logger, audit, def.name));
  app.use('/mcp', hostAndOrigin(hosts, origins));
  app.use('/mcp', cors());
  app.use('/mcp', noGetStream());
  app.use('/mcp', declaredBodySize(maxBody));
  app.use(
    '/mcp',
    bearerAuth(verifier, {
      realm: def.name,
      resourceMetadata: options.authorizationServer ? metadataUrl : undefined,
    }),
  );
  app.use('/mcp', rateLimit(limiter));
  app.use('/mcp', jsonBody(maxBody));
  app.use('/mcp', batchRateLimit(limiter));
  const streams = new AbortController();
  const listens = createListenStreams(verifier, options.listenStreams);
  app.all('/mcp', (c) => serveMcp(c, def, mcp, cancellations, { ended: streams.signal, listens }));
  app.onError((err, c) => answerError(err, c as unknown as Context<McpEnv>, def, refusals, logger));

  return {
    app,
    verifier,
    limiter,
    audit,
    metrics,
    endStreams: () => streams.abort(),
    ...(pins ? { pins } : {}),
    close: async () => {
      streams.abort();
      await pins?.close();
      listens.close();
      // Calls cut off by the end of the shutdown grace unwind (their query cancelled, their event handed over) first.
      await cancellations.idle(5_000);
      await mcp.handler.close();
      await switches.close();
      await policy.close();
      await verifier.close();
      await limiter.close();
      await refusals.close();
      await audit.flush();
    },
  };
}
