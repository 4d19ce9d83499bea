import type { MiddlewareHandler } from 'hono';
import { rpcError } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

/** The methods `/mcp` serves, as a 405 names them (`OPTIONS`: the CORS preflight). */
export const MCP_METHODS_ALLOWED = 'POST, OPTIONS';

/**
 * `GET /mcp` asks Streamable HTTP for a standing server-to-client event stream. These servers are
 * stateless and offer none (a 2026-07-28 client hears of changes by POSTing `subscriptions/listen`),
 * and the transport says what such a server answers: 405 Method Not Allowed. Every 2025-era SDK
 * client sends this GET once after it initializes, and takes the 405 in its stride. So it is
 * housekeeping, not a refusal: answered here, the same for every caller (token or none, whatever it
 * accepts) since it reveals nothing and reaches nothing, with no audit event, as a CORS preflight.
 */
export function noGetStream(): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    if (c.req.method !== 'GET') return next();
    c.get('log').debug('GET /mcp answered 405: no event stream is offered');
    return c.json(
      rpcError(
        -32000,
        'Method not allowed: this server offers no event stream on GET. Send JSON-RPC messages by POST; a 2026-07-28 client hears of tool changes by POSTing subscriptions/listen.',
      ),
      405,
      { Allow: MCP_METHODS_ALLOWED },
    );
  };
}
