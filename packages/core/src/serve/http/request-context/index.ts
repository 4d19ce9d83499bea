import { randomUUID } from 'node:crypto';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context, MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { AuditWriter } from '@bulkhead/audit';
import { lazyChild } from '../../../pipeline/observability/logger.ts';
import { createRequestAudit } from '../../../pipeline/observability/request-audit.ts';
import { requestArrived } from '../../../pipeline/observability/tracing.ts';
import type { McpEnv } from '../state.ts';

/** The client's address as the socket reports it; `unknown` where there is no socket (in-process requests). */
export function sourceOf(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Opens the request: its id (the client's `X-Request-Id` if it sent a sane one,
 * else a fresh one, returned in the response), its start time, a child logger,
 * the source address, the owner of its audit event (for `server`), and empty slots the guards fill.
 */
export function requestContext(
  logger: Logger,
  audit: AuditWriter,
  server: string,
): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const given = c.req.header('x-request-id');
    const requestId = given && /^[\x21-\x7e]{1,100}$/.test(given) ? given : randomUUID();
    c.set('requestId', requestId);
    const started = performance.now();
    c.set('started', started);
    requestArrived(c.req.raw, started);
    c.set('log', lazyChild(logger, { requestId }));
    c.set('source', sourceOf(c));
    c.set('access', undefined);
    c.set('body', undefined);
    c.set('messages', []);
    c.set('audit', createRequestAudit(audit, requestId, { server, started }));
    await next();
    // On the response's own headers: `c.header` after the answer is made would copy the response and
    // turn its body into a stream (the server's fast path for a plain body would be lost).
    c.res.headers.set('x-request-id', requestId);
  };
}
