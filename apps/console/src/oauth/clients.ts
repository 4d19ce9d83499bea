import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import type { Sql } from '@bulkhead/db';
import ipaddr from 'ipaddr.js';

/** An OAuth client as the console knows it: registered here, or described by its metadata document. */
export interface OAuthClient {
  clientId: string;
  source: 'registered' | 'metadata_document';
  clientName: string | null;
  clientUri: string | null;
  redirectUris: string[];
}

/** A client's metadata that cannot be accepted; `error` is the RFC 7591 / 6749 code to answer with. */
export class ClientMetadataError extends Error {
  override readonly name = 'ClientMetadataError';
  constructor(
    readonly error: 'invalid_client_metadata' | 'invalid_redirect_uri' | 'invalid_client',
    message: string,
    /** What went wrong, for the audit log only, where the message must not say it. */
    readonly detail?: string,
  ) {
    super(message);
  }
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const METADATA_LIMIT = 64 * 1024;

/** True for http URLs on the loopback interface: allowed where https is otherwise required. */
export function isLoopbackHttp(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK.has(url.hostname);
}

/** A private-use URI scheme (RFC 8252 7.1): reverse domain name notation, so at least one dot. */
const PRIVATE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/;

/** https, http on loopback, or a private-use scheme in reverse domain notation. */
function allowedScheme(url: URL): boolean {
  const scheme = url.protocol.slice(0, -1);
  return scheme === 'https' || isLoopbackHttp(url) || PRIVATE_SCHEME.test(scheme);
}

/**
 * Why `value` cannot be a redirect URI in any form, or null: a fragment (even an empty one, which
 * `URL` drops) or credentials in the authority (`http://user@127.0.0.1/`, `http://@…`).
 */
function redirectFormProblem(value: string): string | null {
  if (value.includes('#')) return 'a redirect URI has no fragment';
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(value)?.[1];
  if (authority?.includes('@')) return 'a redirect URI has no user name or password';
  return null;
}

/**
 * A redirect URI a client may register: https, http on loopback (native apps, RFC 8252), or a
 * private-use scheme in reverse domain notation (`com.example.app:/cb`: it must contain a dot, so
 * `ws:`, `mailto:` or `view-source:` are not one); never a fragment, never a user name or password.
 */
export function checkRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000)
    throw new ClientMetadataError('invalid_redirect_uri', 'a redirect URI is a URL of up to 2000 characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ClientMetadataError('invalid_redirect_uri', `${JSON.stringify(value)} is not a URL`);
  }
  const problem = redirectFormProblem(value);
  if (problem) throw new ClientMetadataError('invalid_redirect_uri', problem);
  if (!allowedScheme(url))
    throw new ClientMetadataError(
      'invalid_redirect_uri',
      `${value}: redirect URIs are https, http on loopback, or an app's own scheme in reverse domain notation (com.example.app:/callback)`,
    );
  return value;
}

function checkMetadata(body: unknown): {
  clientName: string | null;
  clientUri: string | null;
  redirectUris: string[];
} {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ClientMetadataError('invalid_client_metadata', 'client metadata is a JSON object');
  const m = body as Record<string, unknown>;
  const uris = m.redirect_uris;
  if (!Array.isArray(uris) || uris.length < 1 || uris.length > 20)
    throw new ClientMetadataError('invalid_redirect_uri', 'redirect_uris lists 1 to 20 URIs');
  const redirectUris = uris.map(checkRedirectUri);
  const text = (name: string, max: number) => {
    const v = m[name];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string' || v.length > max)
      throw new ClientMetadataError('invalid_client_metadata', `${name} is text of up to ${max} characters`);
    return v;
  };
  const method = m.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none')
    throw new ClientMetadataError(
      'invalid_client_metadata',
      'only public clients are served: token_endpoint_auth_method "none", with PKCE',
    );
  const grants = m.grant_types;
  if (
    grants !== undefined &&
    !(Array.isArray(grants) && grants.every((g) => g === 'authorization_code' || g === 'refresh_token'))
  )
    throw new ClientMetadataError(
      'invalid_client_metadata',
      'grant_types may hold authorization_code and refresh_token only',
    );
  return { clientName: text('client_name', 200), clientUri: text('client_uri', 2000), redirectUris };
}

/** Registers a client (RFC 7591): checks its metadata and mints its client_id. */
export async function registerClient(sql: Sql, body: unknown): Promise<OAuthClient> {
  const m = checkMetadata(body);
  const clientId = `bhc_${randomBytes(16).toString('base64url')}`;
  await sql`
    insert into bulkhead_oauth_clients (client_id, source, client_name, client_uri, redirect_uris)
    values (${clientId}, 'registered', ${m.clientName}, ${m.clientUri}, ${m.redirectUris})`;
  return { clientId, source: 'registered', ...m };
}

/** True when `clientId` names a Client ID Metadata Document (an https URL with a path, or loopback http). */
export function isMetadataDocumentId(clientId: string): boolean {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  return (url.protocol === 'https:' || isLoopbackHttp(url)) && url.pathname !== '/' && !url.hash;
}

/** Extra IPv6 ranges that are not on the public internet, beyond those `ipaddr.js` names. */
const NOT_GLOBAL_V6 = [
  ipaddr.parseCIDR('3fff::/20'), // documentation (RFC 9637)
  ipaddr.parseCIDR('5f00::/16'), // segment routing SIDs (RFC 9602)
] as const;

/**
 * True for an address on the public internet, parsed with `ipaddr.js`, so that every written form
 * counts (`::127.0.0.1`, `::ffff:0:7f00:1`, `[64:ff9b:1::7f00:1]`, a 6to4 `2002:7f00:1::`). An
 * IPv4 address (or one mapped into IPv6) must be in none of the special ranges: this host,
 * private and shared networks, link-local (the cloud metadata service), multicast, reserved,
 * documentation. An IPv6 address must be global unicast (2000::/3) and in none of its special
 * ranges; that leaves out site-local `fec0::/10`, NAT64 prefixes and the transition forms that
 * carry an IPv4 address (6to4, Teredo), whatever address they carry.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  if (v6.range() !== 'unicast' || !v6.match(ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number]))
    return false;
  return !NOT_GLOBAL_V6.some((range) => v6.match(range as [ipaddr.IPv6, number]));
}

/**
 * Refuses a metadata document's host unless every address it resolves to is public. The fetch
 * resolves the name again: a name that answers differently the second time (DNS rebinding) is not
 * caught here; an egress proxy is the complete answer where that matters.
 */
async function assertPublicHost(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = ipaddr.isValid(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  const inside = addresses.find((a) => !isPublicAddress(a));
  if (inside !== undefined) throw new Error(`${url.hostname} is not a public address (${inside})`);
}

/**
 * A response's text, read up to `max` bytes: a document that says it is larger, or turns out larger
 * while it streams, is refused there and its connection closed, not read to the end first.
 */
async function readCapped(res: Response, max: number): Promise<string> {
  const tooLarge = () => new Error(`larger than ${max / 1024} KiB`);
  const reader = res.body?.getReader();
  if (!reader) return '';
  if (Number(res.headers.get('content-length') ?? 0) > max) {
    await reader.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks).toString('utf8');
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
}

/**
 * The client named by `clientId`: a registered one from the table, or a Client ID Metadata Document
 * fetched from its URL (a public address unless loopback http, no redirects, 5 s, 64 KiB), whose
 * `client_id` must be that URL; what it says is kept so that the token endpoint knows the client
 * without fetching again.
 */
export async function findClient(sql: Sql, clientId: string): Promise<OAuthClient> {
  if (!isMetadataDocumentId(clientId)) {
    const [row] = await sql<OAuthClient[]>`
      select client_id as "clientId", source, client_name as "clientName", client_uri as "clientUri",
        redirect_uris as "redirectUris"
      from bulkhead_oauth_clients where client_id = ${clientId} and source = 'registered'`;
    if (!row) throw new ClientMetadataError('invalid_client', 'this client is not registered here');
    return row;
  }
  // A loopback http client_id is allowed on purpose (a client under development on this machine).
  // What went wrong there is not told: the answer would show the start of whatever local service
  // answers on that port, and which ports are open.
  if (isLoopbackHttp(new URL(clientId))) {
    try {
      return await fetchClient(sql, clientId);
    } catch (err) {
      if (!(err instanceof ClientMetadataError)) throw err;
      throw new ClientMetadataError(
        'invalid_client',
        'the metadata document at this loopback address could not be used (no detail is given for loopback addresses)',
        err.message,
      );
    }
  }
  return fetchClient(sql, clientId);
}

/** The client of a metadata document, fetched and checked, and kept (see {@link findClient}). */
async function fetchClient(sql: Sql, clientId: string): Promise<OAuthClient> {
  let body: unknown;
  try {
    const url = new URL(clientId);
    if (!isLoopbackHttp(url)) await assertPublicHost(url);
    const res = await fetch(clientId, {
      redirect: 'error',
      signal: AbortSignal.timeout(5000),
      headers: { accept: 'application/json' },
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    body = JSON.parse(await readCapped(res, METADATA_LIMIT));
  } catch (err) {
    throw new ClientMetadataError(
      'invalid_client',
      `the client's metadata document could not be read (${(err as Error).message})`,
    );
  }
  if ((body as { client_id?: unknown } | null)?.client_id !== clientId)
    throw new ClientMetadataError('invalid_client', "the metadata document's client_id is not its own URL");
  const m = checkMetadata(body);
  await sql`
    insert into bulkhead_oauth_clients (client_id, source, client_name, client_uri, redirect_uris)
    values (${clientId}, 'metadata_document', ${m.clientName}, ${m.clientUri}, ${m.redirectUris})
    on conflict (client_id) do update set client_name = excluded.client_name, client_uri = excluded.client_uri,
      redirect_uris = excluded.redirect_uris, updated_at = now()`;
  return { clientId, source: 'metadata_document', ...m };
}

/**
 * Whether `redirectUri` is one the client registered: compared exactly, except that a loopback
 * redirect may use any port (RFC 8252 7.3: native apps listen on a port of their choosing).
 */
export function registeredRedirect(client: OAuthClient, redirectUri: string): boolean {
  // Never one with a fragment, credentials or another scheme, whatever was registered before these were refused.
  if (redirectFormProblem(redirectUri)) return false;
  let given: URL;
  try {
    given = new URL(redirectUri);
  } catch {
    return false;
  }
  if (!allowedScheme(given)) return false;
  if (client.redirectUris.includes(redirectUri)) return true;
  if (!isLoopbackHttp(given)) return false;
  return client.redirectUris.some((r) => {
    const u = new URL(r);
    return (
      isLoopbackHttp(u) &&
      u.hostname === given.hostname &&
      u.pathname === given.pathname &&
      u.search === given.search
    );
  });
}
