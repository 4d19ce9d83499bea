import { createHash, randomBytes } from 'node:crypto';
import { issueGrantToken, type GrantSecret } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';

/** How long an authorization code, an access token and a refresh token live. */
export const CODE_SECONDS = 120;
export const ACCESS_SECONDS = 3600;
export const REFRESH_DAYS = 30;

const REFRESH = /^bhr_([A-Za-z0-9_-]{16})_([A-Za-z0-9_-]{43})$/;

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** PKCE (RFC 7636), S256 only: the verifier is 43–128 unreserved characters and hashes to the challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return createHash('sha256').update(verifier).digest('base64url') === challenge;
}

/** What a person granted on the consent page. */
export interface NewGrant {
  clientId: string;
  server: string;
  scopes: string[];
  customerId: string | null;
  /** The granting approver's proof (session or token secret): the database records who granted from it. */
  proof: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
}

/**
 * Records a grant and its authorization code through `bulkhead_oauth_grant`, which checks the approver's
 * proof and right to grant; returns the code (only its hash is kept).
 */
export async function createGrant(sql: Sql, grant: NewGrant): Promise<{ grantId: string; code: string }> {
  const grantId = `g_${randomBytes(12).toString('base64url')}`;
  const code = `bhc_${randomBytes(32).toString('base64url')}`;
  await sql`
    select bulkhead_oauth_grant(${grant.proof}, ${grantId}, ${grant.clientId}, ${grant.server}, ${grant.scopes}, ${grant.customerId},
      ${code}, ${grant.redirectUri}, ${grant.codeChallenge}, ${grant.resource}, ${CODE_SECONDS})`;
  return { grantId, code };
}

/** An authorization code as stored, with its grant. */
export interface StoredCode {
  grantId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  expired: boolean;
  usedAt: Date | null;
  grantRevoked: boolean;
  server: string;
  clientName: string | null;
}

/**
 * Takes a code out of circulation and returns what it was: whatever the exchange decides next, a
 * code is presented once (so a wrong PKCE verifier cannot be retried). Undefined for an unknown code.
 */
export async function consumeCode(sql: Sql, code: string): Promise<StoredCode | undefined> {
  const [row] = await sql<StoredCode[]>`
    with old as (
      select c.code_hash, c.grant_id, c.client_id, c.redirect_uri, c.code_challenge, c.resource,
        c.expires_at <= now() as expired, c.used_at, g.revoked_at is not null as grant_revoked, g.server,
        k.client_name
      from bulkhead_oauth_codes c
      join bulkhead_oauth_grants g on g.id = c.grant_id
      join bulkhead_oauth_clients k on k.client_id = g.client_id
      where c.code_hash = ${sha256(code)}
      for update of c),
    used as (
      update bulkhead_oauth_codes set used_at = now()
      where code_hash = (select code_hash from old) and used_at is null)
    select grant_id as "grantId", client_id as "clientId", redirect_uri as "redirectUri",
      code_challenge as "codeChallenge", resource, expired, used_at as "usedAt", grant_revoked as "grantRevoked",
      server, client_name as "clientName"
    from old`;
  return row;
}

/**
 * Revokes the grant that `secret` belongs to — a code, a refresh token or an access token of it, which the
 * database hashes and looks up itself — with its access and refresh tokens. Answers the grant (if the
 * secret is one of a grant's) and whether this call revoked it.
 */
export async function revokeGrant(
  sql: Sql,
  secret: string,
  reason: string,
): Promise<{ grantId: string | null; revoked: boolean }> {
  const [row] = await sql<{ grantId: string; revoked: boolean }[]>`
    select grant_id as "grantId", revoked from bulkhead_oauth_revoke_grant(${secret}, ${reason})`;
  return { grantId: row?.grantId ?? null, revoked: row?.revoked ?? false };
}

/** What the token endpoint answers (RFC 6749 5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/**
 * Issues a fresh access token and refresh token for a live grant, to the holder of `secret` (the code
 * with its PKCE verifier, or the refresh token being rotated): the database redeems it once.
 */
export async function issueTokens(
  sql: Sql,
  grantId: string,
  clientName: string | null,
  secret: GrantSecret,
): Promise<{ response: TokenResponse; tokenId: string; refreshId: string }> {
  const issued = await issueGrantToken(sql, {
    grantId,
    secret,
    label: `${clientName ?? 'OAuth client'} (OAuth grant ${grantId})`,
    expiresAt: new Date(Date.now() + ACCESS_SECONDS * 1000),
    refreshExpiresAt: new Date(Date.now() + REFRESH_DAYS * 86_400_000),
  });
  return {
    tokenId: issued.tokenId,
    refreshId: issued.refreshId,
    response: {
      access_token: issued.token,
      token_type: 'Bearer',
      expires_in: ACCESS_SECONDS,
      refresh_token: issued.refreshToken,
      scope: issued.scopes.join(' '),
    },
  };
}

/** A refresh token as stored, with its grant; `matches` is false when the secret is wrong. */
export interface StoredRefresh {
  id: string;
  grantId: string;
  clientId: string;
  server: string;
  clientName: string | null;
  matches: boolean;
  expired: boolean;
  usedAt: Date | null;
  grantRevoked: boolean;
}

/** Looks a presented refresh token up and marks it used (rotation); undefined when it is not one of ours. */
export async function consumeRefresh(sql: Sql, token: string): Promise<StoredRefresh | undefined> {
  const m = REFRESH.exec(token);
  if (!m) return undefined;
  const [row] = await sql<StoredRefresh[]>`
    with old as (
      select r.id, r.grant_id, g.client_id, g.server, k.client_name, r.secret_hash = ${sha256(m[2]!)} as matches,
        r.expires_at <= now() as expired, r.used_at, g.revoked_at is not null as grant_revoked
      from bulkhead_oauth_refresh_tokens r
      join bulkhead_oauth_grants g on g.id = r.grant_id
      join bulkhead_oauth_clients k on k.client_id = g.client_id
      where r.id = ${m[1]!}
      for update of r),
    used as (
      update bulkhead_oauth_refresh_tokens set used_at = now()
      where id = (select id from old where matches) and used_at is null)
    select id, grant_id as "grantId", client_id as "clientId", server, client_name as "clientName", matches,
      expired, used_at as "usedAt", grant_revoked as "grantRevoked"
    from old`;
  return row;
}

/**
 * Whether a person has granted `clientId` access before and the grant still stands: only then is
 * the client trusted with an error sent to its redirect URI (see `/oauth/authorize`).
 */
export async function hasLiveGrant(sql: Sql, clientId: string): Promise<boolean> {
  const [row] = await sql`
    select 1 from bulkhead_oauth_grants where client_id = ${clientId} and revoked_at is null limit 1`;
  return row !== undefined;
}

/** Whether the approver `proof` proves may grant OAuth access (`approvers add --can-grant`), now. */
export async function canGrant(sql: Sql, proof: string): Promise<boolean> {
  const [row] = await sql<{ ok: boolean }[]>`
    select coalesce(bool_or('grants:issue' = any (scopes)), false) as ok from bulkhead_console_proof(${proof})`;
  return row!.ok;
}

/** Customers a customer-bound grant can be bound to, by id (the console reads ids and names only). */
export async function customerChoices(sql: Sql): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`select id, name from customers order by id limit 1000`;
}

export async function customerExists(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from customers where id = ${id}`;
  return row !== undefined;
}
