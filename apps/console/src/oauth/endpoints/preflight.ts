import type { Context } from 'hono';

/** `OPTIONS` of the token, registration and revocation endpoints: browser-based clients may call them. */
export function preflight(c: Context): Response {
  c.header('Access-Control-Allow-Origin', '*');
  c.header('Access-Control-Allow-Methods', 'POST');
  c.header('Access-Control-Allow-Headers', 'content-type, authorization, mcp-protocol-version');
  return c.body(null, 204);
}
