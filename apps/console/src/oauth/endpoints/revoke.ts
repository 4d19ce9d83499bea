import { grantOfToken } from '@bulkhead/core/operator';
import type { Context } from 'hono';
import type { OAuthContext } from '../context.ts';
import { grantOfRefresh, revokeGrant } from '../store.ts';

/** `POST /oauth/revoke`: revocation (RFC 7009) of a grant by its refresh or access token. */
export async function revoke(c: Context, ctx: OAuthContext): Promise<Response> {
  const { sql } = ctx;
  const started = performance.now();
  c.header('Access-Control-Allow-Origin', '*');
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const token = typeof form.token === 'string' ? form.token : '';
  const grantId = (await grantOfRefresh(sql, token)) ?? (await grantOfToken(sql, token));
  const revoked = grantId ? await revokeGrant(sql, grantId, 'revocation_endpoint') : false;
  await ctx.record(c, 'revoke', 'ok', started, { grant_id: grantId ?? null, revoked });
  // RFC 7009 2.2: an unknown or already revoked token is answered the same way.
  return c.body(null, 200);
}
