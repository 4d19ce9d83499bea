import type { Context } from 'hono';
import { ClientMetadataError, findClient, registeredRedirect, type OAuthClient } from './clients.ts';
import type { AuthorizationRequest } from './consent-page.tsx';
import { sameResource, type OAuthContext, type OAuthServer } from './context.ts';
import { refusalPage } from './refusal-page.tsx';
import { hasLiveGrant } from './store.ts';

/** An authorization request that failed a check, and the answer that says so. */
export interface Refused {
  ok: false;
  response: Response | Promise<Response>;
}

/** An authorization request that passed every check: the client, the server and scopes it asks for. */
export interface CheckedRequest {
  ok: true;
  client: OAuthClient;
  server: OAuthServer;
  scopes: string[];
  request: AuthorizationRequest;
}

/** The request's client and the redirect URI it registered, or the page that says why not. */
async function checkClient(
  c: Context,
  ctx: OAuthContext,
  query: Record<string, string | undefined>,
  started: number,
): Promise<{ ok: true; client: OAuthClient; redirectUri: string } | Refused> {
  const { sql, record, logger } = ctx;
  const clientId = query.client_id ?? '';
  let client: OAuthClient;
  try {
    if (!clientId) throw new ClientMetadataError('invalid_client', 'the request names no client_id');
    client = await findClient(sql, clientId);
  } catch (err) {
    if (!(err instanceof ClientMetadataError)) throw err;
    await record(
      c,
      'authorize',
      'bad_request',
      started,
      { reason: 'unknown_client', detail: err.detail ?? err.message },
      { clientId },
    );
    return {
      ok: false,
      response: refusalPage(
        c,
        'Unknown client',
        `This client cannot be granted access: ${err.message}.`,
        400,
      ),
    };
  }
  const redirectUri = query.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : '');
  if (!redirectUri || !registeredRedirect(client, redirectUri)) {
    await record(
      c,
      'authorize',
      'forbidden',
      started,
      { reason: 'redirect_uri_not_registered', redirect_uri: redirectUri },
      { clientId },
    );
    logger.warn({ clientId, redirectUri }, 'authorization request with an unregistered redirect URI');
    return {
      ok: false,
      response: refusalPage(
        c,
        'Redirect address not registered',
        `The client asked to send you back to ${redirectUri || 'no address'}, which it did not register. Nothing was granted.`,
        400,
      ),
    };
  }
  return { ok: true, client, redirectUri };
}

/**
 * How a request from a known client with a registered redirect URI is refused: back to the client
 * as `error=…` when a person granted it before, else on a page (see {@link checkRequest}).
 */
function refuser(
  c: Context,
  ctx: OAuthContext,
  query: Record<string, string | undefined>,
  started: number,
  client: OAuthClient,
  redirectUri: string,
) {
  const back = (error: string, description: string) => {
    const url = new URL(redirectUri);
    url.searchParams.set('error', error);
    url.searchParams.set('error_description', description);
    if (query.state) url.searchParams.set('state', query.state);
    url.searchParams.set('iss', ctx.issuer);
    return c.redirect(url.toString(), 303);
  };
  return async (error: string, description: string, reason: string): Promise<Refused> => {
    const trusted = await hasLiveGrant(ctx.sql, client.clientId);
    await ctx.record(
      c,
      'authorize',
      'bad_request',
      started,
      { reason, redirected: trusted },
      { clientId: query.client_id ?? '' },
    );
    if (trusted) return { ok: false as const, response: back(error, description) };
    return {
      ok: false as const,
      response: refusalPage(
        c,
        'Authorization request refused',
        `The client's request cannot be granted (${error}): ${description} Nothing was granted; the client was not sent back to ${redirectUri}.`,
        400,
      ),
    };
  };
}

/**
 * Checks an authorization request. A bad client or redirect URI is shown to the person (the
 * request cannot be answered at a URI the client did not register). Anything else goes back to
 * the client as `error=…` on its redirect URI only when the client is known and trusted: its
 * redirect URI checked against its registration, and a live grant a person gave it before.
 * Registration is open to anyone, so without that a crafted link would bounce a signed-in
 * granter, without a click, to any address a stranger registered; the error is shown on a page.
 */
export async function checkRequest(
  c: Context,
  ctx: OAuthContext,
  query: Record<string, string | undefined>,
): Promise<CheckedRequest | Refused> {
  const started = performance.now();
  const known = await checkClient(c, ctx, query, started);
  if (!known.ok) return known;
  const { client, redirectUri } = known;
  const refuse = refuser(c, ctx, query, started, client, redirectUri);
  if (query.response_type !== 'code')
    return refuse('unsupported_response_type', 'Only response_type=code is served.', 'response_type');
  if (query.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(query.code_challenge ?? ''))
    return refuse(
      'invalid_request',
      'PKCE is required: code_challenge with code_challenge_method=S256.',
      'pkce',
    );
  const server = query.resource
    ? ctx.servers.find((s) => sameResource(s.resource, query.resource!))
    : undefined;
  if (!server)
    return refuse(
      'invalid_target',
      'Name the MCP server in resource (its URL, as its protected-resource metadata says).',
      'resource',
    );
  const asked = (query.scope ?? '').split(' ').filter(Boolean);
  const unknown = asked.filter((s) => !server.scopes.includes(s));
  if (unknown.length)
    return refuse('invalid_scope', `${server.name} has no scope ${unknown.join(', ')}.`, 'scope');
  const scopes = asked.length ? [...new Set(asked)].sort() : [...server.scopes];
  return {
    ok: true,
    client,
    server,
    scopes,
    request: {
      client_id: query.client_id ?? '',
      redirect_uri: redirectUri,
      code_challenge: query.code_challenge!,
      code_challenge_method: 'S256',
      state: query.state ?? '',
      scope: scopes.join(' '),
      resource: server.resource,
    },
  };
}
