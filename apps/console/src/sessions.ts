import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';

/** A signed-in approver. */
export interface Approver {
  tokenId: string;
  label: string;
  /** The person the approver token was issued to (separation of duties). */
  owner: string | null;
  /** The token carries the operator right (`approvers add --can-manage-tokens`, scope tokens:manage). */
  operator: boolean;
  /** The CSRF token every form of this session carries; null for bearer requests (no cookie, no CSRF). */
  csrf: string | null;
}

function hash(id: string): Buffer {
  return createHash('sha256').update(id).digest();
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

/** Opens a session for an approver token; returns the session id for the cookie (only its hash is stored). */
export async function createSession(sql: Sql, tokenId: string, hours: number): Promise<string> {
  const id = randomToken();
  await sql`
    insert into bulkhead_console_sessions (id_hash, token_id, csrf, expires_at)
    values (${hash(id)}, ${tokenId}, ${randomToken()}, now() + ${hours} * interval '1 hour')`;
  return id;
}

/** The approver behind a session cookie, while both the session and its token are valid. */
export async function findSession(sql: Sql, id: string): Promise<Approver | undefined> {
  // The console's role cannot read the token table: the token's validity comes from a function that
  // answers only for approver tokens.
  const [row] = await sql<Approver[]>`
    with who as (
      select a.token_id, a.label, a.owner, s.csrf, bulkhead_operator(a.token_id) as operator
      from bulkhead_console_sessions s
      cross join lateral bulkhead_approver(s.token_id) a
      where s.id_hash = ${hash(id)} and s.expires_at > now()),
    touched as (
      update bulkhead_console_sessions set last_seen_at = now()
      where id_hash = ${hash(id)} and exists (select 1 from who))
    select token_id as "tokenId", label, owner, operator, csrf from who`;
  return row;
}

export async function deleteSession(sql: Sql, id: string): Promise<void> {
  await sql`delete from bulkhead_console_sessions where id_hash = ${hash(id)}`;
}

/** Requests that wait for a decision and have not lapsed (for the navigation). */
export async function countPending(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from bulkhead_approvals where status = 'pending' and expires_at > now()`;
  return row!.n;
}
