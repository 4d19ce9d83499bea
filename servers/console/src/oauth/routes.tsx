/** @jsxImportSource hono/jsx */
import { randomUUID } from 'node:crypto';
import type { AuditWriter, Outcome } from '@bulkhead/audit';
import type { Logger } from '@bulkhead/core';
import { grantOfToken } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { MessagePage, STYLE_HASH } from '../pages.tsx';
import { countPending, sameSecret, type Approver } from '../sessions.ts';
import {
  ClientMetadataError,
  findClient,
  registerClient,
  registeredRedirect,
  type OAuthClient,
} from './clients.ts';
import { ConsentPage, type AuthorizationRequest } from './consent-page.tsx';
import {
  canGrant,
  consumeCode,
  consumeRefresh,
  createGrant,
  customerChoices,
  customerExists,
  grantOfRefresh,
  hasLiveGrant,
  issueTokens,
  pkceMatches,
  revokeGrant,
} from './store.ts';
import { sourceAddress } from '../source.ts';

/** An MCP server the console grants tokens for: its resource URL is what clients name in `resource`. */
export interface OAuthServer {
  name: string;
  description: string;
  /** The server's MCP URL as its protected-resource metadata names it (`https://admin.example.com/mcp`). */
  resource: string;
  scopes: string[];
  customerBound: boolean;
}

/** What the OAuth routes need from the console. */
export interface OAuthDeps {
  sql: Sql;
  logger: Logger;
  audit: AuditWriter;
  /** The issuer: the console's public URL, without a trailing slash. */
  issuer: string;
  servers: OAuthServer[];
  /** The approver signed in through the browser's session cookie, if any. */
  session(c: Context): Promise<Approver | undefined>;
  /** Reverse proxies in front of the console that append to `X-Forwarded-For` (default 0). */
  proxyHops?: number;
  /** Dynamic registrations allowed per source address and window (default 30 in 10 minutes). */
  registrationPolicy?: RegistrationPolicy;
}

/** How many clients one source address may register in a sliding window. */
export interface RegistrationPolicy {
  registrations: number;
  windowSeconds: number;
}

/**
 * 30 registrations per source in any 10 minutes: a client registers once per server it connects to,
 * and anyone may call the endpoint, so without a limit it would write rows for whoever asks.
 */
export const REGISTRATION_POLICY: RegistrationPolicy = { registrations: 30, windowSeconds: 600 };

/** Sources the registration limit remembers at most; the longest-quiet ones are forgotten first. */
const MAX_SOURCES = 10_000;

/**
 * A sliding-window count of registrations per source, in this process (each console replica counts
 * its own, so n replicas let through at most n times the limit). Answers how many seconds to wait,
 * or 0 when the registration may go ahead (and is counted), and whether this is the first refusal of
 * the window (the one worth an audit event).
 */
function registrationLimiter(policy: RegistrationPolicy) {
  const seen = new Map<string, { at: number[]; refusedAt: number }>();
  return (source: string, now = Date.now()): { wait: number; firstRefusal: boolean } => {
    const windowMs = policy.windowSeconds * 1000;
    const entry = seen.get(source) ?? { at: [], refusedAt: 0 };
    entry.at = entry.at.filter((t) => t > now - windowMs);
    seen.delete(source); // re-inserted last: the map stays ordered by last activity
    seen.set(source, entry);
    if (seen.size > MAX_SOURCES) seen.delete(seen.keys().next().value!);
    if (entry.at.length < policy.registrations) {
      entry.at.push(now);
      return { wait: 0, firstRefusal: false };
    }
    const firstRefusal = entry.refusedAt <= now - windowMs || entry.refusedAt < entry.at[0]!;
    if (firstRefusal) entry.refusedAt = now;
    return { wait: Math.max(1, Math.ceil((entry.at[0]! + windowMs - now) / 1000)), firstRefusal };
  };
}

type Env = { Variables: { approver: Approver } };

const REQUEST_FIELDS = [
  'client_id',
  'redirect_uri',
  'code_challenge',
  'code_challenge_method',
  'state',
  'scope',
  'resource',
] as const;

/** A refusal of the token, registration or revocation endpoint: RFC 6749 5.2's JSON body. */
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

function sameResource(a: string, b: string): boolean {
  return a.replace(/\/$/, '') === b.replace(/\/$/, '');
}

/** The CSP source that lets the consent form's answer go back to the client's redirect URI. */
function formTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/**
 * The console as an OAuth 2.1 authorization server for the MCP servers: metadata (RFC 8414),
 * dynamic registration (RFC 7591) and Client ID Metadata Documents, the consent page (authorization
 * code with PKCE S256, RFC 8707 resource indicators), the token endpoint with refresh-token rotation
 * and reuse detection, and revocation (RFC 7009). Every refusal is audited as server `console`,
 * method `oauth/<endpoint>`.
 */
export function mountOAuth(app: Hono<Env>, deps: OAuthDeps): void {
  const { sql, logger, audit, issuer, servers } = deps;
  const proxyHops = deps.proxyHops ?? 0;
  const registrationPolicy = deps.registrationPolicy ?? REGISTRATION_POLICY;
  const mayRegister = registrationLimiter(registrationPolicy);
  const byResource = (resource: string) => servers.find((s) => sameResource(s.resource, resource));

  const record = (
    c: Context,
    method: string,
    outcome: Outcome,
    started: number,
    summary: Record<string, unknown>,
    extra: { tokenId?: string | null; tokenLabel?: string | null; clientId?: string | null } = {},
  ) =>
    audit
      .append({
        server: 'console',
        method: `oauth/${method}`,
        outcome,
        requestId: randomUUID(),
        durationMs: performance.now() - started,
        tokenId: extra.tokenId ?? null,
        tokenLabel: extra.tokenLabel ?? null,
        clientName: c.req.header('user-agent')?.slice(0, 200) ?? null,
        arguments: extra.clientId ? { client_id: extra.clientId } : {},
        resultSummary: summary,
      })
      .catch((err: unknown) => logger.error({ err }, 'oauth audit event could not be written'));

  const page = (c: Context, element: JSX.Element, status = 200) =>
    c.html(html`<!doctype html>${element}`, status as 200);

  /** A refusal shown to the person in the browser: nothing is sent to a redirect URI that is not the client's. */
  const refusalPage = (c: Context, title: string, message: string, status: number, approver?: Approver) =>
    page(c, <MessagePage title={title} message={message} approver={approver} />, status);

  app.get('/.well-known/oauth-authorization-server', (c) => {
    c.header('Access-Control-Allow-Origin', '*');
    return c.json({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: [...new Set(servers.flatMap((s) => s.scopes))].sort(),
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
  });

  app.options('/oauth/:endpoint{token|register|revoke}', (c) => {
    c.header('Access-Control-Allow-Origin', '*');
    c.header('Access-Control-Allow-Methods', 'POST');
    c.header('Access-Control-Allow-Headers', 'content-type, authorization, mcp-protocol-version');
    return c.body(null, 204);
  });

  app.post('/oauth/register', async (c) => {
    const started = performance.now();
    c.header('Access-Control-Allow-Origin', '*');
    const source = sourceAddress(c, proxyHops);
    const limit = mayRegister(source);
    if (limit.wait) {
      // Audited once per source and window: the refusals themselves must not flood the log.
      if (limit.firstRefusal)
        await record(c, 'register', 'rate_limited', started, {
          reason: 'registration_limit',
          source,
          limit: `${registrationPolicy.registrations} per ${registrationPolicy.windowSeconds} s`,
        });
      c.header('Retry-After', String(limit.wait));
      return c.json(
        {
          error: 'invalid_request',
          error_description: `Too many client registrations from this address (${registrationPolicy.registrations} in ${registrationPolicy.windowSeconds} s); retry in ${limit.wait} s.`,
        },
        429,
      );
    }
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      await record(c, 'register', 'bad_request', started, { reason: 'not_json' });
      return c.json({ error: 'invalid_client_metadata', error_description: 'The body is not JSON.' }, 400);
    }
    try {
      const client = await registerClient(sql, body);
      await record(
        c,
        'register',
        'ok',
        started,
        { client_name: client.clientName },
        { clientId: client.clientId },
      );
      return c.json(
        {
          client_id: client.clientId,
          client_id_issued_at: Math.floor(Date.now() / 1000),
          client_name: client.clientName ?? undefined,
          client_uri: client.clientUri ?? undefined,
          redirect_uris: client.redirectUris,
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        },
        201,
      );
    } catch (err) {
      if (!(err instanceof ClientMetadataError)) throw err;
      await record(c, 'register', 'bad_request', started, { reason: err.error, detail: err.message });
      return c.json({ error: err.error, error_description: `${err.message}.` }, 400);
    }
  });

  /**
   * Checks an authorization request. A bad client or redirect URI is shown to the person (the
   * request cannot be answered at a URI the client did not register). Anything else goes back to
   * the client as `error=…` on its redirect URI only when the client is known and trusted: its
   * redirect URI checked against its registration, and a live grant a person gave it before.
   * Registration is open to anyone, so without that a crafted link would bounce a signed-in
   * granter, without a click, to any address a stranger registered; the error is shown on a page.
   */
  const checkRequest = async (
    c: Context,
    q: Record<string, string | undefined>,
  ): Promise<
    | { ok: true; client: OAuthClient; server: OAuthServer; scopes: string[]; request: AuthorizationRequest }
    | { ok: false; response: Response | Promise<Response> }
  > => {
    const started = performance.now();
    const clientId = q.client_id ?? '';
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
    const redirectUri = q.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : '');
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
    const back = (error: string, description: string) => {
      const url = new URL(redirectUri);
      url.searchParams.set('error', error);
      url.searchParams.set('error_description', description);
      if (q.state) url.searchParams.set('state', q.state);
      url.searchParams.set('iss', issuer);
      return c.redirect(url.toString(), 303);
    };
    const refuse = async (error: string, description: string, reason: string) => {
      const trusted = await hasLiveGrant(sql, client.clientId);
      await record(c, 'authorize', 'bad_request', started, { reason, redirected: trusted }, { clientId });
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
    if (q.response_type !== 'code')
      return refuse('unsupported_response_type', 'Only response_type=code is served.', 'response_type');
    if (q.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(q.code_challenge ?? ''))
      return refuse(
        'invalid_request',
        'PKCE is required: code_challenge with code_challenge_method=S256.',
        'pkce',
      );
    const server = q.resource ? byResource(q.resource) : undefined;
    if (!server)
      return refuse(
        'invalid_target',
        'Name the MCP server in resource (its URL, as its protected-resource metadata says).',
        'resource',
      );
    const asked = (q.scope ?? '').split(' ').filter(Boolean);
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
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: q.code_challenge!,
        code_challenge_method: 'S256',
        state: q.state ?? '',
        scope: scopes.join(' '),
        resource: server.resource,
      },
    };
  };

  /** The signed-in approver, if they may grant; else the page that says why not. */
  const granter = async (
    c: Context,
    started: number,
    clientId: string,
  ): Promise<{ ok: true; approver: Approver } | { ok: false; response: Response | Promise<Response> }> => {
    const approver = await deps.session(c);
    if (!approver) {
      const url = new URL(c.req.url);
      return {
        ok: false,
        response: c.redirect(`/login?next=${encodeURIComponent(url.pathname + url.search)}`, 303),
      };
    }
    if (!(await canGrant(sql, approver.tokenId))) {
      await record(
        c,
        'authorize',
        'forbidden',
        started,
        { reason: 'may_not_grant' },
        { tokenId: approver.tokenId, tokenLabel: approver.label, clientId },
      );
      return {
        ok: false,
        response: refusalPage(
          c,
          'You may not grant access',
          'Your approver token may decide approvals but not grant clients access to servers. Ask for one issued with `bulkhead approvers add --can-grant`.',
          403,
          approver,
        ),
      };
    }
    return { ok: true, approver };
  };

  const consent = async (
    c: Context,
    approver: Approver,
    checked: { client: OAuthClient; server: OAuthServer; scopes: string[]; request: AuthorizationRequest },
    customers: { id: string; name: string }[] | null,
    error?: string,
  ) => {
    c.header(
      'Content-Security-Policy',
      `default-src 'none'; style-src ${STYLE_HASH}; form-action 'self' ${formTarget(checked.request.redirect_uri)}; frame-ancestors 'none'; base-uri 'none'`,
    );
    return page(
      c,
      <ConsentPage
        approver={approver}
        pending={await countPending(sql)}
        clientName={checked.client.clientName}
        clientId={checked.client.clientId}
        redirectHost={new URL(checked.request.redirect_uri).host || checked.request.redirect_uri}
        server={checked.server.name}
        serverDescription={checked.server.description}
        scopes={checked.scopes}
        customers={customers}
        request={checked.request}
        error={error}
      />,
      error ? 400 : 200,
    );
  };

  app.get('/oauth/authorize', async (c) => {
    const started = performance.now();
    // Signed in first: until a person who may grant is here, the request is not looked at — no client
    // metadata document is fetched and no error is sent to a redirect URI on anyone's behalf.
    const who = await granter(c, started, c.req.query('client_id') ?? '');
    if (!who.ok) return who.response;
    const checked = await checkRequest(c, c.req.query());
    if (!checked.ok) return checked.response;
    return consent(
      c,
      who.approver,
      checked,
      checked.server.customerBound ? await customerChoices(sql) : null,
    );
  });

  app.post('/oauth/authorize', async (c) => {
    const started = performance.now();
    const form = await c.req.parseBody();
    const q: Record<string, string | undefined> = { response_type: 'code' };
    for (const name of [...REQUEST_FIELDS, '_csrf', 'decision', 'customer_id'])
      q[name] = typeof form[name] === 'string' ? form[name] : undefined;
    const who = await granter(c, started, q.client_id ?? '');
    if (!who.ok) return who.response;
    const approver = who.approver;
    if (!q._csrf || !approver.csrf || !sameSecret(q._csrf, approver.csrf)) {
      await record(
        c,
        'authorize',
        'forbidden',
        started,
        { reason: 'csrf' },
        { tokenId: approver.tokenId, tokenLabel: approver.label },
      );
      return refusalPage(
        c,
        'Form refused',
        'The form did not carry this session’s security token. Start again from the client.',
        403,
        approver,
      );
    }
    const checked = await checkRequest(c, q);
    if (!checked.ok) return checked.response;
    const { client, server, scopes, request } = checked;
    const redirect = new URL(request.redirect_uri);
    if (request.state) redirect.searchParams.set('state', request.state);
    redirect.searchParams.set('iss', issuer);
    const who2 = { tokenId: approver.tokenId, tokenLabel: approver.label, clientId: client.clientId };
    if (q.decision !== 'allow') {
      await record(c, 'authorize', 'rejected', started, { reason: 'denied', server: server.name }, who2);
      redirect.searchParams.set('error', 'access_denied');
      redirect.searchParams.set('error_description', 'The person denied access.');
      return c.redirect(redirect.toString(), 303);
    }
    let customerId: string | null = null;
    if (server.customerBound) {
      customerId = q.customer_id ?? '';
      if (!customerId || !(await customerExists(sql, customerId)))
        return consent(
          c,
          approver,
          checked,
          await customerChoices(sql),
          'Choose the customer this access is bound to.',
        );
    }
    const { grantId, code } = await createGrant(sql, {
      clientId: client.clientId,
      server: server.name,
      scopes,
      customerId,
      grantedBy: { tokenId: approver.tokenId, label: approver.label, owner: approver.owner },
      redirectUri: request.redirect_uri,
      codeChallenge: request.code_challenge,
      resource: server.resource,
    });
    await record(
      c,
      'authorize',
      'approved',
      started,
      {
        grant_id: grantId,
        server: server.name,
        scopes,
        customer_id: customerId,
        client_name: client.clientName,
      },
      who2,
    );
    logger.info(
      { grantId, server: server.name, client: client.clientId, by: approver.label },
      'oauth access granted',
    );
    redirect.searchParams.set('code', code);
    return c.redirect(redirect.toString(), 303);
  });

  app.post('/oauth/token', async (c) => {
    const started = performance.now();
    c.header('Access-Control-Allow-Origin', '*');
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const f = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
    const clientId = f('client_id');
    try {
      const grantType = f('grant_type');
      /** Issues the grant's next access and refresh token, audits it, and answers them. */
      const issue = async (
        stored: { grantId: string; clientName: string | null; server: string },
        more: Record<string, unknown> = {},
      ) => {
        const issued = await issueTokens(sql, stored.grantId, stored.clientName);
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
          { tokenId: issued.tokenId, clientId },
        );
        return c.json(issued.response);
      };
      if (grantType === 'authorization_code') {
        const code = f('code');
        if (!code) throw new OAuthRefusal('invalid_request', 'The code is missing.', 'code_missing');
        const stored = await consumeCode(sql, code);
        if (!stored) throw new OAuthRefusal('invalid_grant', 'The code is unknown.', 'unknown_code');
        if (stored.usedAt) {
          // A code presented twice was intercepted, or the client is replaying: what it opened is closed.
          await revokeGrant(sql, stored.grantId, 'code_replayed');
          throw new OAuthRefusal(
            'invalid_grant',
            'The code was already used; its grant is revoked.',
            'code_replayed',
          );
        }
        if (stored.expired) throw new OAuthRefusal('invalid_grant', 'The code has expired.', 'code_expired');
        if (stored.grantRevoked)
          throw new OAuthRefusal('invalid_grant', 'The grant was revoked.', 'grant_revoked');
        if (clientId !== stored.clientId)
          throw new OAuthRefusal(
            'invalid_grant',
            'The code was issued to another client.',
            'client_mismatch',
          );
        if (f('redirect_uri') !== stored.redirectUri)
          throw new OAuthRefusal(
            'invalid_grant',
            'redirect_uri differs from the authorization request.',
            'redirect_uri_mismatch',
          );
        const verifier = f('code_verifier');
        if (!verifier)
          throw new OAuthRefusal(
            'invalid_grant',
            'The PKCE code_verifier is missing.',
            'pkce_verifier_missing',
          );
        if (!pkceMatches(verifier, stored.codeChallenge))
          throw new OAuthRefusal(
            'invalid_grant',
            'The PKCE code_verifier does not match.',
            'pkce_verifier_mismatch',
          );
        const resource = f('resource');
        if (resource !== undefined && !sameResource(resource, stored.resource))
          throw new OAuthRefusal(
            'invalid_target',
            'The code was granted for another resource.',
            'resource_mismatch',
          );
        return await issue(stored);
      }
      if (grantType === 'refresh_token') {
        const token = f('refresh_token');
        if (!token)
          throw new OAuthRefusal('invalid_request', 'The refresh_token is missing.', 'refresh_missing');
        const stored = await consumeRefresh(sql, token);
        if (!stored?.matches)
          throw new OAuthRefusal('invalid_grant', 'The refresh token is unknown.', 'unknown_refresh');
        if (stored.grantRevoked)
          throw new OAuthRefusal('invalid_grant', 'The grant was revoked.', 'grant_revoked', 'unauthorized');
        if (stored.usedAt) {
          // Rotation means a refresh token works once; a second use means two parties hold it.
          await revokeGrant(sql, stored.grantId, 'refresh_reuse');
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
        const resource = f('resource');
        if (resource !== undefined && (!server || !sameResource(resource, server.resource)))
          throw new OAuthRefusal('invalid_target', 'The grant is for another resource.', 'resource_mismatch');
        return await issue(stored, { rotated_from: stored.id });
      }
      throw new OAuthRefusal(
        'unsupported_grant_type',
        'grant_type is authorization_code or refresh_token.',
        'grant_type',
      );
    } catch (err) {
      if (!(err instanceof OAuthRefusal)) throw err;
      await record(
        c,
        'token',
        err.outcome,
        started,
        { reason: err.reason, grant_type: f('grant_type') ?? null },
        { clientId: clientId ?? null },
      );
      logger.info({ reason: err.reason, clientId }, 'oauth token request refused');
      return c.json({ error: err.error, error_description: err.description }, err.status);
    }
  });

  app.post('/oauth/revoke', async (c) => {
    const started = performance.now();
    c.header('Access-Control-Allow-Origin', '*');
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const token = typeof form.token === 'string' ? form.token : '';
    const grantId = (await grantOfRefresh(sql, token)) ?? (await grantOfToken(sql, token));
    const revoked = grantId ? await revokeGrant(sql, grantId, 'revocation_endpoint') : false;
    await record(c, 'revoke', 'ok', started, { grant_id: grantId ?? null, revoked });
    // RFC 7009 2.2: an unknown or already revoked token is answered the same way.
    return c.body(null, 200);
  });
}
