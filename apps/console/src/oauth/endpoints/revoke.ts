import type { Context } from 'hono';
import type { OAuthContext } from '../context.ts';
import { revokeGrant } from '../store.ts';

/** `POST /oauth/revoke`: revocation (RFC 7009) of a grant by its refresh or access token. */
export async function revoke(c: Context, ctx: OAuthContext): Promise<Response> {
  const { sql } = ctx;
  const started = performance.now();
  c.header('Access-Control-Allow-Origin', '*');
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const token = typeof form.token === 'string' ? form.token : '';
  // The database finds the grant by the token's own secret: the console never revokes by an id.
  const { grantId, revoked } = await revokeGrant(sql, token, 'revocation_endpoint');
  await ctx.record(c, 'revoke', 'ok', started, { grant_id: grantId, revoked });
  // RFC 7009 2.2: an unknown or already revoked token is answered the same way.
  return c.body(null, 200);
}
