import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';

/** A signed-in approver. */
export interface Approver {
  tokenId: string;
  label: string;
  /** The person the approver token was issued to (separation of duties). */
  owner: string | null;
  /** The token carries the operator right (`approvers add --can-manage-tokens`, scope tokens:manage). */
  operator: boolean;
  /** The token may grant OAuth access (`approvers add --can-grant`, scope grants:issue). */
  canGrant: boolean;
  /** The person (IdP `iss` + `sub`) a session signed in by OpenID Connect is for; null for approver tokens. */
  personId: string | null;
  /** The person's e-mail as the IdP last named it (null for approver tokens). */
  email: string | null;
  /** The CSRF token every form of this session carries; null for bearer requests (no cookie, no CSRF). */
  csrf: string | null;
  /**
   * What the database acts on for this approver: the session's cookie value, or the bearer's approver
   * token. Every database function that acts for an approver checks it; never logged, never shown.
   */
  proof: string;
}

/** A fresh random value for cookies and CSRF tokens. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time comparison of two strings. */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Opens a session for the approver whose token is presented in full (the database verifies its secret:
 * the console's login cannot open a session for a token it only knows by id). Returns the session id
 * for the cookie; only its hash is stored.
 */
export async function createSession(sql: Sql, token: string, hours: number): Promise<string> {
  const id = randomToken();
  await sql`select 1 from bulkhead_console_sign_in(${token}, ${id}, ${randomToken()}, ${hours})`;
  return id;
}

/**
 * The approver behind a session cookie, while both the session and its token (or person) are valid; a
 * person's rights are their groups' as the database reads them now. With `tokenSignIn` false, a session
 * opened with an approver token no longer counts.
 */
export async function findSession(sql: Sql, id: string, tokenSignIn = true): Promise<Approver | undefined> {
  const [row] = await sql<
    {
      tokenId: string;
      label: string;
      owner: string | null;
      scopes: string[];
      csrf: string;
      personId: string | null;
      email: string | null;
    }[]
  >`
    select token_id as "tokenId", label, owner, scopes, csrf, person_id as "personId", email
    from bulkhead_console_session(${id})`;
  if (!row || (!tokenSignIn && !row.personId)) return undefined;
  return approverOf(row, row.csrf, id);
}

/** An approver as the console carries it, from what the database derived from `proof`. */
export function approverOf(
  who: {
    tokenId: string;
    label: string;
    owner: string | null;
    scopes: readonly string[];
    personId?: string | null;
    email?: string | null;
  },
  csrf: string | null,
  proof: string,
): Approver {
  return {
    tokenId: who.tokenId,
    label: who.label,
    owner: who.owner,
    operator: who.scopes.includes('tokens:manage'),
    canGrant: who.scopes.includes('grants:issue'),
    personId: who.personId ?? null,
    email: who.email ?? null,
    csrf,
    proof,
  };
}

/** Ends the session whose cookie value is `id`. */
export async function deleteSession(sql: Sql, id: string): Promise<void> {
  await sql`select bulkhead_console_sign_out(${id})`;
}

/** Requests that wait for a decision and have not lapsed (for the navigation). */
export async function countPending(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from bulkhead_approvals where status = 'pending' and expires_at > now()`;
  return row!.n;
}
