import type { Context } from 'hono';
import { sourceAddress } from '../../source.ts';
import { ClientMetadataError, registerClient } from '../clients.ts';
import type { OAuthContext } from '../context.ts';
import type { RegistrationLimiter } from '../registration-limit.ts';

/** `POST /oauth/register`: dynamic client registration (RFC 7591), limited per source address. */
export async function register(
  c: Context,
  ctx: OAuthContext,
  limiter: RegistrationLimiter,
): Promise<Response> {
  const { sql, record } = ctx;
  const { policy } = limiter;
  const started = performance.now();
  c.header('Access-Control-Allow-Origin', '*');
  const source = sourceAddress(c, ctx.proxyHops);
  const limit = limiter.check(source);
  if (limit.wait) {
    // Audited once per source and window: the refusals themselves must not flood the log.
    if (limit.firstRefusal)
      await record(c, 'register', 'rate_limited', started, {
        reason: 'registration_limit',
        source,
        limit: `${policy.registrations} per ${policy.windowSeconds} s`,
      });
    c.header('Retry-After', String(limit.wait));
    return c.json(
      {
        error: 'invalid_request',
        error_description: `Too many client registrations from this address (${policy.registrations} in ${policy.windowSeconds} s); retry in ${limit.wait} s.`,
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
}
