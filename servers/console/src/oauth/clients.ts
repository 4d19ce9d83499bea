import { randomBytes } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { Sql } from '@bulkhead/db';

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

/**
 * A redirect URI a client may register: https, http on loopback (native apps, RFC 8252), or a
 * private-use scheme with a dot in it (`com.example.app:/cb`, `cursor://…`); never a fragment,
 * never `javascript:` or `data:`.
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
  if (url.hash) throw new ClientMetadataError('invalid_redirect_uri', 'a redirect URI has no fragment');
  const scheme = url.protocol.slice(0, -1);
  const ok =
    scheme === 'https' ||
    isLoopbackHttp(url) ||
    (scheme !== 'http' && !['javascript', 'data', 'file', 'blob', 'vbscript'].includes(scheme));
  if (!ok)
    throw new ClientMetadataError(
      'invalid_redirect_uri',
      `${value}: redirect URIs are https, http on loopback, or an app's own scheme`,
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

/**
 * Where a metadata document is never fetched from: addresses that are not on the public internet
 * (this host, private and shared networks, link-local — the cloud metadata service —, multicast,
 * reserved), so that a `client_id` cannot make the console request something inside its network.
 * IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
 */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** True for an address on the public internet (see NOT_PUBLIC). */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  return family !== 0 && !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * Refuses a metadata document's host unless every address it resolves to is public. The fetch
 * resolves the name again: a name that answers differently the second time (DNS rebinding) is not
 * caught here; an egress proxy is the complete answer where that matters.
 */
async function assertPublicHost(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
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
  let body: unknown;
  try {
    // A loopback http client_id is allowed on purpose (a client under development on this machine).
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
  if (client.redirectUris.includes(redirectUri)) return true;
  let given: URL;
  try {
    given = new URL(redirectUri);
  } catch {
    return false;
  }
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
