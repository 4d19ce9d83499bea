import { Hono, type Context, type MiddlewareHandler } from 'hono';
import {
  createMcpHandler,
  localhostAllowedHostnames,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import { createAuditWriter, type AuditEventInput, type AuditWriter } from '@bulkhead/audit';
import { isReachable, type Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { Access } from '../pipeline/access.ts';
import { internalError } from '../pipeline/errors.ts';
import type { RequestAudit } from '../pipeline/request-audit.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import type { ApprovalRequester, CallKit } from '../pipeline/call-tool.ts';
import { approvalsFor } from '../approvals/requester.ts';
import { hasGatedTools, type ServerDefinition } from '../pipeline/server-definition.ts';
import { buildMcpServer } from './mcp-server.ts';
import { createRateLimiter, type RateLimiter } from './rate-limit.ts';
import { createReadLanes, type ReadLanes } from '../pipeline/read-lanes.ts';
import { SESSIONS_SHARED } from './pooler.ts';
import { traceRefusal } from '../pipeline/tracing.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';
import { createToolSwitches } from './tool-switches.ts';
import { bearerAuth } from './http/middleware/bearer-auth.ts';
import { cors } from './http/middleware/cors.ts';
import { hostAndOrigin } from './http/middleware/host-origin.ts';
import { jsonBody, unserved } from './http/middleware/json-body.ts';
import { noGetStream } from './http/middleware/no-get-stream.ts';
import { batchRateLimit, rateLimit } from './http/middleware/rate-limit.ts';
import { requestContext, sourceOf } from './http/middleware/request-context.ts';
import { createMetrics, metricsRoute, type Metrics } from './metrics.ts';
import { Refusal, rpcError } from './http/refusal.ts';
import { createRefusalLog, type RefusalLog } from './http/refusal-log.ts';
import { createCancellations, type Cancellations } from './http/cancellations.ts';
import type { McpEnv } from './http/state.ts';
import { createResultWaits, type ResultWaits, type ResultWaitLimits } from '../tasks/result-waits.ts';
import { createListenStreams, type ListenStreamOptions, type ListenStreams } from './listen-streams.ts';
import type { Upstreams } from '../pipeline/upstream/upstreams.ts';

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
  /** How often the switched-off tools are read again whatever was announced (default 1000 ms). */
  toolSwitchRefreshMs?: number;
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
  close(): Promise<void>;
}

/** Hostnames in the SDK's validators' form (IPv6 in brackets). */
function hostnameOf(url: URL): string {
  return url.hostname.toLowerCase();
}

function originHostname(origin: string): string | undefined {
  try {
    return new URL(origin).hostname.toLowerCase();
  } catch {
    return origin.toLowerCase();
  }
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
  const kit: CallKit<ApprovalRecord> = {
    server: def.name,
    catalog: def.catalog,
    sql,
    ...(reads ? { reads } : {}),
    logger,
    audit,
    auditFullResults: options.auditFullResults ?? false,
    ...(options.upstreams ? { upstreams: options.upstreams } : {}),
    switchedOff: switches,
    ...approvalsFor(def, options),
  };
  const mcp = mcpHandler(def, kit, cancellations, createResultWaits(options.taskResultWaits), maxBody);
  // Open 2026-07-28 `subscriptions/listen` streams on this replica hear of a switch at once.
  switches.onChange(() => mcp.handler.notify.toolsChanged());

  const app = new Hono<McpEnv>();
  const metadataUrl = mountProbes(app, def, options, { reads, metrics, publicUrl });
  const { hosts, origins } = allowedHostsAndOrigins(publicUrl, options);
  app.use('/mcp', requestContext(logger, audit));
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
    close: async () => {
      streams.abort();
      listens.close();
      // Calls cut off by the end of the shutdown grace unwind (their query cancelled, their event handed over) first.
      await cancellations.idle(5_000);
      await mcp.handler.close();
      await switches.close();
      await verifier.close();
      await limiter.close();
      await refusals.close();
      await audit.flush();
    },
  };
}

/** The Host names and Origin hostnames a request may carry: loopback, the public URL's, and those configured. */
function allowedHostsAndOrigins(
  publicUrl: URL,
  options: Pick<HttpAppOptions, 'allowedHosts' | 'allowedOrigins'>,
): { hosts: string[]; origins: string[] } {
  const own = [...localhostAllowedHostnames(), hostnameOf(publicUrl)];
  return {
    hosts: [...new Set([...own, ...(options.allowedHosts ?? []).map((h) => h.toLowerCase())])],
    origins: [...new Set([...own, ...(options.allowedOrigins ?? []).map((o) => originHostname(o)!)])],
  };
}

/** The MCP layer, and how its per-request server factory finds the request it serves. */
interface McpLayer {
  handler: McpHttpHandler;
  /** What the server factory needs of each request, keyed by the request itself. */
  handles: WeakMap<Request, RequestHandle>;
}

function mcpHandler(
  def: ServerDefinition,
  kit: CallKit<ApprovalRecord>,
  cancellations: Cancellations,
  resultWaits: ResultWaits,
  maxBody: number,
): McpLayer {
  const handles = new WeakMap<Request, RequestHandle>();
  const handler = createMcpHandler(
    ({ requestInfo }) => {
      const request = requestInfo && handles.get(requestInfo);
      if (!request) throw new Error('the MCP layer served a request the app did not hand it');
      return buildMcpServer(def, kit, {
        access: request.access,
        audit: () => request.audit,
        cancellable: (rpcId, parent) => cancellations.track(request.access.tokenId, rpcId, parent),
        resultWaits,
      });
    },
    {
      onerror: (err) => kit.logger.debug({ err }, 'mcp handler reported an error'),
      maxRequestBodySize: maxBody,
    },
  );
  return { handler, handles };
}

/**
 * `GET /healthz`, `/readyz` (both pools serve), `/metrics`, and with an authorization server the
 * protected-resource metadata; returns the metadata's URL, which every 401 names.
 */
function mountProbes(
  app: Hono<McpEnv>,
  def: ServerDefinition,
  options: HttpAppOptions,
  made: { reads: ReadLanes | undefined; metrics: Metrics; publicUrl: URL },
): string {
  const { sql } = options;
  const { reads, publicUrl } = made;
  app.get('/healthz', (c) => c.json({ status: 'ok', server: def.name }));
  // Ready when both pools serve: the main one (tokens, events, writes) and the read pool (read-only calls),
  // and no pooler was found sharing sessions at run time (the start-up check names it, and so does this).
  app.get('/readyz', async (c) => {
    if (reads?.sharesSessions)
      return c.json({ status: 'unavailable', server: def.name, reason: SESSIONS_SHARED }, 503);
    const [main, read] = await Promise.all([isReachable(sql, 2000), reads ? reads.serves(2000) : true]);
    if (main && read) return c.json({ status: 'ready', server: def.name });
    const reason = main ? 'read pool cannot serve' : 'database unreachable';
    return c.json({ status: 'unavailable', server: def.name, reason }, 503);
  });
  app.get('/metrics', metricsRoute(made.metrics, options.metricsToken, sourceOf));
  const resource = `${publicUrl.origin}${publicUrl.pathname.replace(/\/$/, '')}/mcp`;
  const metadataUrl = `${publicUrl.origin}/.well-known/oauth-protected-resource${new URL(resource).pathname}`;
  if (options.authorizationServer) {
    const document = protectedResourceMetadata(def, resource, options.authorizationServer);
    // Public documents: any page may read them (a browser-based client discovers the server with them).
    const serveMetadata = (c: Context) => {
      c.header('Access-Control-Allow-Origin', '*');
      c.header('Cache-Control', 'public, max-age=300');
      return c.json(document);
    };
    app.get('/.well-known/oauth-protected-resource', serveMetadata);
    app.get(new URL(metadataUrl).pathname, serveMetadata);
  }
  return metadataUrl;
}

/** Refuses a body declared larger than `maxBody` before anything reads it. */
function declaredBodySize(maxBody: number): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    if (Number(c.req.header('content-length') ?? '0') > maxBody)
      throw new Refusal(
        413,
        'payload_too_large',
        { error: 'payload_too_large', error_description: `Request bodies are limited to ${maxBody} bytes.` },
        { summary: { reason: 'body', bytes: Number(c.req.header('content-length')) } },
      );
    await next();
  };
}

/** The event of a request that yields no tool call of its own. */
function requestEvent(
  def: ServerDefinition,
  c: Context<McpEnv>,
  outcome: AuditEventInput['outcome'],
  summary: Record<string, unknown>,
): AuditEventInput {
  const access = c.get('access');
  const presented = c.get('presented');
  const messages = c.get('messages');
  return {
    server: def.name,
    method: messages[0]?.method ?? `http ${c.req.method}`,
    tool: typeof messages[0]?.tool === 'string' ? messages[0].tool : null,
    outcome,
    requestId: c.get('requestId'),
    durationMs: performance.now() - c.get('started'),
    tokenId: access?.tokenId ?? presented?.tokenId ?? null,
    tokenLabel: access?.label ?? presented?.label ?? null,
    resultSummary: summary,
  };
}

/**
 * A request past every guard, handed to the MCP layer with its audit owner. Messages that are not
 * served (unknown methods, malformed calls) are answered by the MCP layer; each gets its event here.
 */
async function serveMcp(
  c: Context<McpEnv>,
  def: ServerDefinition,
  mcp: McpLayer,
  cancellations: Cancellations,
  streams: { ended: AbortSignal; listens: ListenStreams },
): Promise<Response> {
  const access = c.get('access')!;
  const log = c.get('log');
  const request = c.get('audit');
  cancellations.cancel(access.tokenId, c.get('body'));
  const owed = c.get('messages').flatMap((m) => {
    const reason = unserved(m);
    return reason ? [{ m, reason }] : [];
  });
  await Promise.all(
    owed.map(({ m, reason }) =>
      request
        .claim()
        .keep({ ...requestEvent(def, c, 'bad_request', { reason }), method: m.method ?? 'response' })
        .catch((err: unknown) => log.error({ err }, 'audit event could not be written')),
    ),
  );
  // A listen stream lasts until the client goes away, the server stops or its token ends: its request carries the three signals.
  let raw = c.req.raw;
  let release: (() => void) | undefined;
  if (c.get('messages').some((m) => m.method === 'subscriptions/listen')) {
    const bearer = (c.req.header('authorization') ?? '').replace(/^Bearer\s+/i, '');
    const place = streams.listens.open(access.tokenId, bearer);
    if (!place.ok) return listenRefused(c, def, streams.listens, place.full);
    release = place.release;
    const signal = AbortSignal.any([c.req.raw.signal, streams.ended, place.signal]);
    signal.addEventListener('abort', release, { once: true });
    raw = new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers, signal });
  }
  mcp.handles.set(raw, { access, audit: request });
  const response = await mcp.handler.fetch(raw, {
    authInfo: { token: access.tokenId, clientId: access.tokenId, scopes: [...access.scopes] },
    ...(c.get('body') !== undefined ? { parsedBody: c.get('body') } : {}),
  });
  // What the MCP layer turns away before any tool runs (a wrong Accept header, an unsupported version, DELETE without sessions) is a refusal too.
  const streaming = response.headers.get('content-type')?.startsWith('text/event-stream') ?? false;
  if (!streaming) release?.();
  const expectsCall = c.get('messages').some((m) => m.wellFormedCall);
  if (response.status >= 400 || (expectsCall && !streaming))
    await request
      .settle(() => requestEvent(def, c, 'bad_request', { status: response.status, reason: 'mcp' }))
      .catch((err: unknown) => log.error({ err }, 'audit event could not be written'));
  return response;
}

/** A `subscriptions/listen` past a cap: answered at once (429), audited, with what to do instead. */
async function listenRefused(
  c: Context<McpEnv>,
  def: ServerDefinition,
  listens: ListenStreams,
  full: 'token' | 'process',
): Promise<Response> {
  const { perToken, total } = listens.limits;
  const cap =
    full === 'token'
      ? `this token already holds ${perToken} open subscriptions/listen streams`
      : `this server already holds ${total} open subscriptions/listen streams`;
  await c
    .get('audit')
    .settle(() => requestEvent(def, c, 'rate_limited', { status: 429, reason: 'listen_streams', full }))
    .catch((err: unknown) => c.get('log').error({ err }, 'audit event could not be written'));
  const body = c.get('body') as { id?: unknown } | undefined;
  const id = body && !Array.isArray(body) ? body.id : null;
  return c.json(
    rpcError(
      LISTEN_STREAMS_FULL,
      `${cap}: close one before opening another (one stream tells a client of every change), or call tools/list.`,
      id,
    ),
    429,
  );
}

/** The JSON-RPC error code of a listen stream refused past a cap (the code of a full `tasks/result` wait too). */
export const LISTEN_STREAMS_FULL = -32000;

/** A guard's `Refusal`, answered and audited (through the refusal log); anything else an internal error with an incident id. */
async function answerError(
  err: Error,
  c: Context<McpEnv>,
  def: ServerDefinition,
  refusals: RefusalLog,
  logger: Logger,
): Promise<Response> {
  const request = c.get('audit');
  if (err instanceof Refusal) {
    // Refused before the MCP layer read the body: a server span of its own, which its event names.
    const span = { request: c.req.raw, route: '/mcp', status: err.status, outcome: err.outcome };
    return traceRefusal(span, async () => {
      await refusals
        .record(requestEvent(def, c, err.outcome, { status: err.status, ...err.options.summary }), {
          request,
          // A refusal because the database is away cannot be provoked at will: each is written (or held) on its own.
          authenticated: c.get('access') !== undefined || err.outcome === 'unavailable',
          source: c.get('source') ?? 'unknown',
        })
        .catch((e: unknown) => logger.error({ err: e }, 'audit event for a refusal could not be written'));
      c.get('log')?.info(
        { status: err.status, outcome: err.outcome, ...err.options.summary },
        'request refused',
      );
      return c.json(err.body, err.status, err.options.headers);
    });
  }
  const { incident, text } = internalError();
  logger.error({ err, incident, requestId: c.get('requestId') }, 'request failed');
  if (request)
    await request
      .settle(() => requestEvent(def, c, 'internal_error', { status: 500, incident }))
      .catch((e: unknown) => logger.error({ err: e }, 'audit event could not be written'));
  return c.json(rpcError(-32603, text), 500);
}

/**
 * The protected-resource metadata (RFC 9728) of a server: its MCP URL as the resource, the console as
 * its authorization server, and the scopes its tools need.
 */
export function protectedResourceMetadata(def: ServerDefinition, resource: string, issuer: string) {
  return {
    resource,
    authorization_servers: [issuer.replace(/\/$/, '')],
    scopes_supported: [...def.catalog.scopes].sort(),
    bearer_methods_supported: ['header'],
    resource_name: `Bulkhead ${def.name}`,
  };
}

/** What the MCP layer's server factory gets from the request that carries it. */
interface RequestHandle {
  access: Access;
  audit: RequestAudit;
}
