import type { Context } from 'hono';
import { createMcpHandler, type McpHttpHandler } from '@modelcontextprotocol/server';
import type { Access } from '../../../pipeline/call/access.ts';
import type { CallKit } from '../../../pipeline/call/call-tool.ts';
import type { RequestAudit } from '../../../pipeline/observability/request-audit.ts';
import type { ServerDefinition } from '../../../pipeline/tool-definition/server-definition.ts';
import type { ApprovalRecord } from '../../../approvals/store.ts';
import type { ResultWaits } from '../../../tasks/result-waits.ts';
import type { ListenStreams } from '../../listen-streams.ts';
import { buildMcpServer } from '../../mcp-server.ts';
import type { Cancellations } from '../cancellations.ts';
import { unserved } from '../json-body/index.ts';
import { rpcError } from '../refusal.ts';
import { requestEvent } from '../request-event.ts';
import type { McpEnv } from '../state.ts';

/** The MCP layer, and how its per-request server factory finds the request it serves. */
export interface McpLayer {
  handler: McpHttpHandler;
  /** What the server factory needs of each request, keyed by the request itself. */
  handles: WeakMap<Request, RequestHandle>;
}

export function mcpHandler(
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
 * A request past every guard, handed to the MCP layer with its audit owner. Messages that are not
 * served (unknown methods, malformed calls) are answered by the MCP layer; each gets its event here.
 */
export async function serveMcp(
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
        .keep({ ...requestEvent(c, 'bad_request', { reason }), method: m.method ?? 'response' })
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
      .settle(() => requestEvent(c, 'bad_request', { status: response.status, reason: 'mcp' }))
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
    .settle(() => requestEvent(c, 'rate_limited', { status: 429, reason: 'listen_streams', full }))
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

/** What the MCP layer's server factory gets from the request that carries it. */
interface RequestHandle {
  access: Access;
  audit: RequestAudit;
}
