import type { MiddlewareHandler } from 'hono';
import type { McpEnv } from '../state.ts';

const ALLOW_HEADERS = [
  'authorization',
  'content-type',
  'accept',
  'last-event-id',
  'mcp-protocol-version',
  'mcp-session-id',
  'mcp-method',
  'mcp-name',
  'x-request-id',
].join(', ');
const EXPOSE_HEADERS = [
  'mcp-session-id',
  'mcp-protocol-version',
  'www-authenticate',
  'x-request-id',
  'retry-after',
].join(', ');

/**
 * CORS for browser-based clients (the Inspector's web UI and the like). It
 * runs after the Origin check, so only allowed origins get here: a preflight
 * is answered without a token, and every answer — refusals included, so that
 * the page can read a 401 — echoes the allowed origin. Requests from other
 * origins never reach this guard and get no `Access-Control-*` header.
 */
export function cors(): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const origin = c.req.header('origin');
    if (c.req.method === 'OPTIONS') {
      if (origin) {
        c.header('Access-Control-Allow-Origin', origin);
        c.header('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
        c.header('Access-Control-Allow-Headers', ALLOW_HEADERS);
        c.header('Access-Control-Max-Age', '600');
        c.header('Vary', 'Origin');
      }
      c.header('Allow', 'GET, POST, DELETE, OPTIONS');
      return c.body(null, 204);
    }
    await next();
    if (origin) {
      c.res.headers.set('Access-Control-Allow-Origin', origin);
      c.res.headers.set('Access-Control-Expose-Headers', EXPOSE_HEADERS);
      c.res.headers.append('Vary', 'Origin');
    }
  };
}
