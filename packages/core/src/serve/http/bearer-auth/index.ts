import { isConnectionError } from '@bulkhead/db';
import type { MiddlewareHandler } from 'hono';
import { waitAtMost } from '../../../pipeline/call/time-limit.ts';
import { earlyStep } from '../../../pipeline/observability/tracing.ts';
import type { TokenVerifier } from '../../tokens.ts';
import { Refusal } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

/** Query parameters that carry credentials, and values that look like a Bulkhead token: never accepted in a URL. */
const QUERY_CREDENTIAL = /^(access[-_]?token|token|bearer|auth(orization)?|api[-_]?key|key)$/i;
const TOKEN_LIKE = /bho?_[a-z][a-z0-9-]*_/i;

/** What a 401 says, to the client and in its `WWW-Authenticate` challenge. */
export interface Challenge {
  realm: string;
  /** The protected-resource metadata URL, for clients that can get a token by OAuth. */
  resourceMetadata?: string | undefined;
}

/** The `WWW-Authenticate` value of a refused token (RFC 6750), naming what was wrong and where to learn more. */
export function bearerChallenge(challenge: Challenge, description: string): string {
  const parts = [
    `realm="${challenge.realm}"`,
    ...(challenge.resourceMetadata ? [`resource_metadata="${challenge.resourceMetadata}"`] : []),
    'error="invalid_token"',
    `error_description="${description}"`,
  ];
  return `Bearer ${parts.join(', ')}`;
}

const DESCRIPTION =
  'The access token is missing, malformed, unknown, expired, revoked or issued for another server';
const STATIC_DESCRIPTION =
  'The access token is unknown, expired, revoked or issued for another server; a new one is issued with bulkhead tokens issue';

/** Pauses before the token check is tried again on a lost connection: one per retry. */
const RETRY_PAUSES_MS = [50, 250];
/** A check that took longer than this to fail met a database that is away, not a stale connection. */
const QUICK_FAILURE_MS = 500;
/**
 * How long a token check may take before the request is answered 503 (the database is away): a
 * database that stalls (a failover's new primary waiting for a standby, a lock held) would otherwise
 * hold the request past any time limit, since the check runs before the call and its limit.
 */
export const TOKEN_CHECK_LIMIT_MS = 5_000;

/**
 * The token check, tried again on a lost connection. It only reads, so a retry is safe, and a pooled
 * connection whose backend was terminated (an administrator, a failover, a pooler's restart) fails
 * its next query at once, before the pool notices the socket closed: the retry runs on a fresh one.
 * Only a quick failure is tried again: one that waited for its connection (a primary killed, a host
 * gone) would wait as long again, so the caller answers 503 at once instead.
 */
async function verifyWithRetry<T>(check: () => Promise<T>): Promise<T> {
  for (const pause of RETRY_PAUSES_MS) {
    const started = performance.now();
    try {
      return await check();
    } catch (err) {
      if (!isConnectionError(err) || performance.now() - started > QUICK_FAILURE_MS) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
  return check();
}

/**
 * The bearer token: from the `Authorization` header only (a token in the URL
 * is refused, it would end up in logs), verified for this server's audience.
 * A refusal never says which of the reasons it was (that would tell whether a
 * token exists); the audit event does.
 *
 * Any refused token is 401 `invalid_token` (the MCP authorization specification: "Invalid or
 * expired tokens MUST receive a HTTP 401 response"; 403 is for insufficient scope, which this
 * server answers as an unknown tool instead), with the protected-resource metadata where OAuth is
 * configured. A refused static token (`bh_…`, pasted into a client's configuration) gets a
 * description that says how a new one is issued.
 */
export function bearerAuth(verifier: TokenVerifier, challenge: Challenge): MiddlewareHandler<McpEnv> {
  const unauthorized = (reason: string, tokenId?: string, description = DESCRIPTION) =>
    new Refusal(
      401,
      'unauthorized',
      {
        error: 'invalid_token',
        error_description:
          description === DESCRIPTION
            ? `${DESCRIPTION}. Present a valid token for this server.`
            : `${description}.`,
      },
      {
        headers: { 'WWW-Authenticate': bearerChallenge(challenge, description) },
        summary: { reason, ...(tokenId ? { presented_token_id: tokenId } : {}) },
      },
    );
  return async (c, next) => {
    for (const [name, value] of new URL(c.req.url).searchParams) {
      if (QUERY_CREDENTIAL.test(name) || TOKEN_LIKE.test(value)) throw unauthorized('token_in_query');
    }
    const authorization = c.req.header('authorization');
    const bearer = authorization?.match(/^Bearer ([^\s]+)$/i)?.[1];
    if (!bearer) throw unauthorized(authorization ? 'malformed_header' : 'missing');
    let verdict: Awaited<ReturnType<TokenVerifier['verify']>>;
    try {
      // A check that went to the database is a step of the request's trace.
      const checked = verifyWithRetry(() =>
        verifier.verify(bearer, (start) =>
          earlyStep(c.req.raw, {
            name: 'token check',
            start,
            end: performance.now(),
            attributes: { 'bulkhead.token.cache': 'miss' },
          }),
        ),
      );
      verdict = await waitAtMost(checked, performance.now() + TOKEN_CHECK_LIMIT_MS, TOKEN_CHECK_LIMIT_MS);
    } catch (err) {
      if (!isConnectionError(err)) throw err;
      // The token cannot be checked while the database is away: say so, and when to come back.
      throw new Refusal(
        503,
        'unavailable',
        {
          error: 'temporarily_unavailable',
          error_description: 'The database is unreachable; nothing was done. Retry in a few seconds.',
        },
        { headers: { 'Retry-After': '5' }, summary: { reason: 'database' } },
      );
    }
    if (!verdict.ok) {
      // A genuine token refused here (revoked, expired, another server's) is named in the refusal's event.
      if (verdict.tokenId && verdict.label !== undefined)
        c.get('audit').identify({ tokenId: verdict.tokenId, label: verdict.label });
      if (verdict.oauth === false) throw unauthorized(verdict.reason, verdict.tokenId, STATIC_DESCRIPTION);
      throw unauthorized(verdict.reason, verdict.tokenId);
    }
    c.set('access', verdict.access);
    c.get('audit').identify(verdict.access);
    await next();
  };
}
