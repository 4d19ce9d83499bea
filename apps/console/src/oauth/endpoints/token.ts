import type { Outcome } from '@bulkhead/audit';
import type { GrantSecret } from '@bulkhead/core/operator';
import type { Context } from 'hono';
import { sameResource, type OAuthContext } from '../context.ts';
import { jwtBearer, JWT_BEARER } from './jwt-bearer.ts';
import { consumeCode, consumeRefresh, issueTokens, pkceMatches, revokeGrant } from '../store.ts';

/** A refusal of the token endpoint: RFC 6749 5.2's JSON body. */
class OAuthRefusal extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly reason: string,
    readonly outcome: Outcome = 'bad_request',
    readonly status: 400 | 401 = 400,
  ) {
    super(description);
  }
}

/** A string field of the token request's form, if it has one. */
type FormField = (name: string) => string | undefined;

/** A grant that passed every check, and what its audit event adds. */
interface Issuable {
  stored: { grantId: string; clientName: string | null; server: string };
  /** What the database redeems to issue the tokens: the grant's own secret, never its id alone. */
  secret: GrantSecret;
  more: Record<string, unknown>;
}

/** The grant an authorization code opens; any code presented twice revokes it. */
async function codeGrant(
  ctx: OAuthContext,
  field: FormField,
  clientId: string | undefined,
): Promise<Issuable> {
  const { sql } = ctx;
  const code = field('code');
  if (!code) throw new OAuthRefusal('invalid_request', 'The code is missing.', 'code_missing');
  const stored = await consumeCode(sql, code);
  if (!stored) throw new OAuthRefusal('invalid_grant', 'The code is unknown.', 'unknown_code');
  if (stored.usedAt) {
    // A code presented twice was intercepted, or the client is replaying: what it opened is closed.
    await revokeGrant(sql, code, 'code_replayed');
    throw new OAuthRefusal(
      'invalid_grant',
      'The code was already used; its grant is revoked.',
      'code_replayed',
    );
  }
  if (stored.expired) throw new OAuthRefusal('invalid_grant', 'The code has expired.', 'code_expired');
  if (stored.grantRevoked) throw new OAuthRefusal('invalid_grant', 'The grant was revoked.', 'grant_revoked');
  if (clientId !== stored.clientId)
    throw new OAuthRefusal('invalid_grant', 'The code was issued to another client.', 'client_mismatch');
  if (field('redirect_uri') !== stored.redirectUri)
    throw new OAuthRefusal(
      'invalid_grant',
      'redirect_uri differs from the authorization request.',
      'redirect_uri_mismatch',
    );
  const verifier = field('code_verifier');
  if (!verifier)
    throw new OAuthRefusal('invalid_grant', 'The PKCE code_verifier is missing.', 'pkce_verifier_missing');
  if (!pkceMatches(verifier, stored.codeChallenge))
    throw new OAuthRefusal(
      'invalid_grant',
      'The PKCE code_verifier does not match.',
      'pkce_verifier_mismatch',
    );
  const resource = field('resource');
  if (resource !== undefined && !sameResource(resource, stored.resource))
    throw new OAuthRefusal(
      'invalid_target',
      'The code was granted for another resource.',
      'resource_mismatch',
    );
  return { stored, secret: { code, verifier }, more: {} };
}

/** The grant a refresh token continues; rotation means a refresh token used twice revokes it. */
async function refreshGrant(
  ctx: OAuthContext,
  field: FormField,
  clientId: string | undefined,
): Promise<Issuable> {
  const { sql, servers } = ctx;
  const token = field('refresh_token');
  if (!token) throw new OAuthRefusal('invalid_request', 'The refresh_token is missing.', 'refresh_missing');
  const stored = await consumeRefresh(sql, token);
  if (!stored?.matches)
    throw new OAuthRefusal('invalid_grant', 'The refresh token is unknown.', 'unknown_refresh');
  if (stored.grantRevoked)
    throw new OAuthRefusal('invalid_grant', 'The grant was revoked.', 'grant_revoked', 'unauthorized');
  if (stored.usedAt) {
    // Rotation means a refresh token works once; a second use means two parties hold it.
    await revokeGrant(sql, token, 'refresh_reuse');
    throw new OAuthRefusal(
      'invalid_grant',
      'The refresh token was already used; its grant is revoked.',
      'refresh_reuse',
      'unauthorized',
    );
  }
  if (stored.expired)
    throw new OAuthRefusal('invalid_grant', 'The refresh token has expired.', 'refresh_expired');
  if (clientId !== stored.clientId)
    throw new OAuthRefusal(
      'invalid_grant',
      'The refresh token was issued to another client.',
      'client_mismatch',
    );
  const server = servers.find((s) => s.name === stored.server);
  const resource = field('resource');
  if (resource !== undefined && (!server || !sameResource(resource, server.resource)))
    throw new OAuthRefusal('invalid_target', 'The grant is for another resource.', 'resource_mismatch');
  return { stored, secret: { refreshToken: token }, more: { rotated_from: stored.id } };
}

/**
 * `POST /oauth/token`: exchanges an authorization code (with its PKCE verifier) or a refresh token
 * for the grant's next access and refresh token, or an ID-JAG for a short-lived access token (see
 * {@link jwtBearer}); every refusal is audited and answered as RFC 6749 5.2.
 */
export async function token(c: Context, ctx: OAuthContext): Promise<Response> {
  const { sql, record, logger } = ctx;
  const started = performance.now();
  c.header('Access-Control-Allow-Origin', '*');
  const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
  const field: FormField = (name) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
  const clientId = field('client_id');
  if (field('grant_type') === JWT_BEARER && ctx.idJag) return jwtBearer(c, ctx, field);
  try {
    const grantType = field('grant_type');
    let grant: Issuable;
    if (grantType === 'authorization_code') grant = await codeGrant(ctx, field, clientId);
    else if (grantType === 'refresh_token') grant = await refreshGrant(ctx, field, clientId);
    else
      throw new OAuthRefusal(
        'unsupported_grant_type',
        `grant_type is authorization_code or refresh_token${ctx.idJag ? ` or ${JWT_BEARER}` : ''}.`,
        'grant_type',
      );
    const { stored, secret, more } = grant;
    const issued = await issueTokens(sql, stored.grantId, stored.clientName, secret);
    await record(
      c,
      'token',
      'ok',
      started,
      {
        grant_type: grantType,
        grant_id: stored.grantId,
        server: stored.server,
        refresh_id: issued.refreshId,
        ...more,
      },
      { by: { tokenId: issued.tokenId, label: null }, clientId },
    );
    return c.json(issued.response);
  } catch (err) {
    if (!(err instanceof OAuthRefusal)) throw err;
    await record(
      c,
      'token',
      err.outcome,
      started,
      { reason: err.reason, grant_type: field('grant_type') ?? null },
      { clientId: clientId ?? null },
    );
    logger.info({ reason: err.reason, clientId }, 'oauth token request refused');
    return c.json({ error: err.error, error_description: err.description }, err.status);
  }
}
