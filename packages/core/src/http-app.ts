import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { createAuditWriter, type AuditWriter, type Outcome } from '@bulkhead/audit';
import { isReachable, type Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { Access } from './access.ts';
import type { ApprovalRequester, CallKit } from './call-tool.ts';
import { approvalsFor } from './approvals/requester.ts';
import type { ServerDefinition } from './create-server.ts';
import { buildMcpServer } from './mcp-server.ts';
import { createRateLimiter } from './rate-limit.ts';
import { createTokenVerifier, type TokenVerifier } from './tokens.ts';

/** What serving a definition over HTTP needs. */
export interface HttpAppOptions {
  sql: Sql;
  logger: Logger;
  /** The server's canonical URL (`BULKHEAD_PUBLIC_URL`); its host and origin are always allowed. */
  publicUrl: string;
  /** Extra allowed `Origin` values; loopback origins are always allowed. */
  allowedOrigins?: string[];
  /** Extra allowed `Host` names; loopback names are always allowed. */
  allowedHosts?: string[];
  /** Largest accepted request body (default 1 MiB). */
  maxBodyBytes?: number;
  /** Requests per token per minute; 0 switches the limit off (default 600). */
  rateLimitPerMinute?: number;
  auditFullResults?: boolean;
  audit?: AuditWriter;
  verifier?: TokenVerifier;
  /** Files gated calls; created automatically when the server has a gated tool. */
  approvals?: ApprovalRequester;
  /** `BULKHEAD_APPROVAL_WEBHOOK_URL`: approval requests are also sent there. */
  approvalWebhookUrl?: string | undefined;
  /** `BULKHEAD_CONSOLE_URL`: where approvers decide, linked from notifications. */
  consoleUrl?: string | undefined;
}

/** A served server: the Hono app and how to release what it holds. */
export interface HttpApp {
  app: Hono;
  close(): Promise<void>;
}

/** Query parameters that carry credentials, and values that look like a Bulkhead token: never accepted in a URL. */
const QUERY_CREDENTIAL = /^(access[-_]?token|token|bearer|auth(orization)?|api[-_]?key|key)$/i;
const TOKEN_LIKE = /bh_[a-z][a-z0-9-]*_/i;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

function hostname(hostHeader: string): string {
  if (hostHeader.startsWith('[')) return hostHeader.slice(0, hostHeader.indexOf(']') + 1);
  return hostHeader.split(':')[0]!.toLowerCase();
}

function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).hostname;
  } catch {
    return undefined;
  }
}

async function readLimited(req: Request, max: number): Promise<Uint8Array | 'too_large'> {
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return 'too_large';
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/**
 * The HTTP face of a server: `POST /mcp` (Streamable HTTP, 2026-07-28 and the
 * 2025-11-25 stateless fallback), `GET /healthz`, `GET /readyz`. Before the
 * MCP transport sees a request it passes, in order: Host and Origin checks,
 * the body limit, the bearer token (audience = this server), the per-token
 * rate limit and, for `tools/call`, the tool's scope. Every refusal is audited.
 */
export function createHttpApp(def: ServerDefinition, options: HttpAppOptions): HttpApp {
  const { sql, logger } = options;
  const audit = options.audit ?? createAuditWriter(sql);
  const verifier = options.verifier ?? createTokenVerifier(sql, def.name);
  const limiter = createRateLimiter(sql, options.rateLimitPerMinute ?? 600);
  const maxBody = options.maxBodyBytes ?? 1024 * 1024;
  const publicUrl = new URL(options.publicUrl);
  const hosts = new Set([
    ...LOOPBACK,
    publicUrl.hostname,
    ...(options.allowedHosts ?? []).map((h) => h.toLowerCase()),
  ]);
  const origins = new Set([publicUrl.origin, ...(options.allowedOrigins ?? [])]);
  const kit: CallKit = {
    server: def.name,
    catalog: def.catalog,
    sql,
    logger,
    audit,
    auditFullResults: options.auditFullResults ?? false,
    ...approvalsFor(def, options),
  };
  const requestIds = new WeakMap<Request, string>();
  const handler = createMcpHandler(
    ({ authInfo, requestInfo }) =>
      buildMcpServer(def, kit, (authInfo?.extra as { access: Access }).access, () =>
        requestInfo ? (requestIds.get(requestInfo) ?? randomUUID()) : randomUUID(),
      ),
    { onerror: (err) => logger.debug({ err }, 'mcp handler reported an error'), maxRequestBodySize: maxBody },
  );

  const app = new Hono();
  app.get('/healthz', (c) => c.json({ status: 'ok', server: def.name }));
  app.get('/readyz', async (c) =>
    (await isReachable(sql, 2000))
      ? c.json({ status: 'ready', server: def.name })
      : c.json({ status: 'unavailable', server: def.name, reason: 'database unreachable' }, 503),
  );

  app.all('/mcp', async (c) => {
    const started = performance.now();
    const requestId = c.req.header('x-request-id')?.slice(0, 100) || randomUUID();
    const log = logger.child({ requestId });
    let method = `http ${c.req.method}`;
    let tool: string | null = null;
    let access: Access | undefined;
    // A presented token whose secret matched but which is refused (revoked, expired): the log names it.
    let known: { tokenId: string; label: string } | undefined;
    const refuse = async (
      status: number,
      outcome: Outcome,
      body: unknown,
      headers: Record<string, string>,
      summary: Record<string, unknown>,
    ) => {
      try {
        await audit.append({
          server: def.name,
          method,
          tool,
          outcome,
          requestId,
          durationMs: performance.now() - started,
          tokenId: access?.tokenId ?? known?.tokenId ?? null,
          tokenLabel: access?.label ?? known?.label ?? null,
          resultSummary: { status, ...summary },
        });
      } catch (err) {
        log.error({ err }, 'audit event for a refusal could not be written');
      }
      log.info({ status, outcome, ...summary }, 'request refused');
      return c.json(body, status as 401, headers);
    };
    const unauthorized = (reason: string, tokenId?: string) =>
      refuse(
        401,
        'unauthorized',
        { error: 'invalid_token', error_description: 'A valid access token for this server is required.' },
        {
          'WWW-Authenticate': `Bearer realm="${def.name}", error="invalid_token", error_description="The access token is missing, malformed, unknown, expired, revoked or issued for another server"`,
        },
        { reason, ...(tokenId ? { presented_token_id: tokenId } : {}) },
      );

    const host = c.req.header('host');
    if (!host || !hosts.has(hostname(host))) {
      return refuse(
        403,
        'forbidden',
        { error: 'forbidden', error_description: 'Host not allowed.' },
        {},
        { reason: 'host', host: host ?? null },
      );
    }
    const origin = c.req.header('origin');
    if (origin !== undefined) {
      const oh = originHost(origin);
      if (!origins.has(origin) && !(oh && LOOPBACK.has(oh))) {
        return refuse(
          403,
          'forbidden',
          { error: 'forbidden', error_description: 'Origin not allowed.' },
          {},
          { reason: 'origin', origin },
        );
      }
    }
    const declared = Number(c.req.header('content-length') ?? '0');
    if (declared > maxBody) {
      return refuse(
        413,
        'payload_too_large',
        { error: 'payload_too_large', error_description: `Request bodies are limited to ${maxBody} bytes.` },
        {},
        { reason: 'body', bytes: declared },
      );
    }
    for (const [name, value] of new URL(c.req.url).searchParams) {
      if (QUERY_CREDENTIAL.test(name) || TOKEN_LIKE.test(value)) return unauthorized('token_in_query');
    }
    const authorization = c.req.header('authorization');
    const bearer = authorization?.match(/^Bearer ([^\s]+)$/i)?.[1];
    if (!bearer) return unauthorized(authorization ? 'malformed_header' : 'missing');
    const verdict = await verifier.verify(bearer);
    if (!verdict.ok) {
      if (verdict.label !== undefined && verdict.tokenId)
        known = { tokenId: verdict.tokenId, label: verdict.label };
      return unauthorized(verdict.reason, verdict.tokenId);
    }
    access = verdict.access;

    const limit = await limiter.take(access.tokenId);
    if (!limit.ok) {
      return refuse(
        429,
        'rate_limited',
        {
          error: 'rate_limited',
          error_description: `Too many requests; retry after ${limit.retryAfterSeconds} s.`,
        },
        { 'Retry-After': String(limit.retryAfterSeconds) },
        { reason: 'rate' },
      );
    }

    const answer = async (response: Response) => {
      response.headers.set('x-request-id', requestId);
      // Whatever the MCP layer turns away (a wrong Accept header, an unsupported version, GET without sessions) is a refusal too.
      if (response.status >= 400) {
        await audit
          .append({
            server: def.name,
            method,
            tool,
            outcome: 'bad_request',
            requestId,
            durationMs: performance.now() - started,
            tokenId: access!.tokenId,
            tokenLabel: access!.label,
            resultSummary: { status: response.status, reason: 'mcp' },
          })
          .catch((err: unknown) => log.error({ err }, 'audit event for a refusal could not be written'));
      }
      return response;
    };
    if (c.req.method !== 'POST')
      return answer(await handler.fetch(c.req.raw, { authInfo: authInfo(bearer, access) }));
    const bytes = await readLimited(c.req.raw, maxBody);
    if (bytes === 'too_large') {
      return refuse(
        413,
        'payload_too_large',
        { error: 'payload_too_large', error_description: `Request bodies are limited to ${maxBody} bytes.` },
        {},
        { reason: 'body' },
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      return refuse(
        400,
        'bad_request',
        { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not JSON.' } },
        {},
        { reason: 'parse' },
      );
    }
    if (Array.isArray(body)) {
      return refuse(
        400,
        'bad_request',
        {
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32600,
            message: 'Batches are not supported: send one JSON-RPC message per request.',
          },
        },
        {},
        { reason: 'batch' },
      );
    }
    const message = body as { method?: unknown; params?: { name?: unknown } };
    if (typeof message.method === 'string') method = message.method;
    if (message.method === 'tools/call' && typeof message.params?.name === 'string') {
      tool = message.params.name;
      const wanted = def.catalog.byName.get(tool);
      if (wanted && !access.scopes.includes(wanted.scope)) {
        return refuse(
          403,
          'forbidden',
          {
            error: 'insufficient_scope',
            error_description: `This token lacks the scope ${wanted.scope}.`,
            scope: wanted.scope,
          },
          {
            'WWW-Authenticate': `Bearer realm="${def.name}", error="insufficient_scope", scope="${wanted.scope}", error_description="The token lacks the scope ${wanted.scope}"`,
          },
          { reason: 'scope', scope: wanted.scope },
        );
      }
    }
    requestIds.set(c.req.raw, requestId);
    return answer(await handler.fetch(c.req.raw, { authInfo: authInfo(bearer, access), parsedBody: body }));
  });

  return {
    app,
    close: async () => {
      await handler.close();
      await verifier.close();
    },
  };
}

function authInfo(token: string, access: Access) {
  return { token, clientId: access.tokenId, scopes: [...access.scopes], extra: { access } };
}
