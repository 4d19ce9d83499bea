import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import type { Access } from './access.ts';

/** `mcp` tokens open an MCP server; `approver` tokens open the approvers' console. Neither opens the other. */
export type TokenKind = 'mcp' | 'approver';

/** A stored token, never with its secret. */
export interface TokenRecord {
  id: string;
  kind: TokenKind;
  server: string;
  label: string;
  scopes: string[];
  customerId: string | null;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  rotatedFrom: string | null;
}

/** Whether a token can be used now. */
export type TokenState = 'active' | 'expired' | 'revoked';

export function tokenState(t: Pick<TokenRecord, 'expiresAt' | 'revokedAt'>, now = new Date()): TokenState {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && t.expiresAt <= now) return 'expired';
  return 'active';
}

const ID_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';
const TOKEN = /^bh_([a-z][a-z0-9-]{0,39})_([a-z2-9]{12})_([A-Za-z0-9_-]{43})$/;

function newId(): string {
  const bytes = randomBytes(12);
  return Array.from(bytes, (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join('');
}

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Splits `bh_<server>_<id>_<secret>`; undefined when the text is not shaped like a token. */
export function parseToken(token: string): { server: string; id: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { server: m[1]!, id: m[2]!, secret: m[3]! } : undefined;
}

/** What {@link issueToken} needs. */
export interface IssueTokenOptions {
  kind?: TokenKind;
  server: string;
  label: string;
  scopes: string[];
  customerId?: string | null;
  expiresAt: Date | null;
  createdBy: string;
  rotatedFrom?: string | null;
}

const COLUMNS = `id, kind, server, label, scopes, customer_id as "customerId", created_at as "createdAt",
  created_by as "createdBy", expires_at as "expiresAt", revoked_at as "revokedAt", last_used_at as "lastUsedAt",
  rotated_from as "rotatedFrom"`;

/** Creates a token and returns it with its secret: the only time the secret exists outside the client. */
export async function issueToken(
  sql: Sql,
  o: IssueTokenOptions,
): Promise<{ token: string; record: TokenRecord }> {
  const id = newId();
  const secret = randomBytes(32).toString('base64url');
  const [record] = await sql<TokenRecord[]>`
    insert into bulkhead_tokens (id, kind, server, label, scopes, customer_id, secret_hash, created_by, expires_at, rotated_from)
    values (${id}, ${o.kind ?? 'mcp'}, ${o.server}, ${o.label}, ${o.scopes}, ${o.customerId ?? null}, ${hashSecret(secret)},
      ${o.createdBy}, ${o.expiresAt}, ${o.rotatedFrom ?? null})
    returning ${sql.unsafe(COLUMNS)}`;
  return { token: `bh_${o.server}_${id}_${secret}`, record: record! };
}

/** Tokens, newest first; revoked and expired ones only with `all`. */
export async function listTokens(
  sql: Sql,
  filter: { server?: string; kind?: TokenKind; all?: boolean } = {},
): Promise<TokenRecord[]> {
  return sql<TokenRecord[]>`
    select ${sql.unsafe(COLUMNS)} from bulkhead_tokens
    where true
    ${filter.server ? sql`and server = ${filter.server}` : sql``}
    ${filter.kind ? sql`and kind = ${filter.kind}` : sql``}
    ${filter.all ? sql`` : sql`and revoked_at is null and (expires_at is null or expires_at > now())`}
    order by created_at desc, id`;
}

export async function getToken(sql: Sql, id: string): Promise<TokenRecord | undefined> {
  const [row] = await sql<TokenRecord[]>`select ${sql.unsafe(COLUMNS)} from bulkhead_tokens where id = ${id}`;
  return row;
}

/** Revokes a token; false when it was unknown or already revoked. */
export async function revokeToken(sql: Sql, id: string): Promise<boolean> {
  const rows =
    await sql`update bulkhead_tokens set revoked_at = now() where id = ${id} and revoked_at is null returning id`;
  return rows.length === 1;
}

/** Issues a new secret with the same server, label, scopes, customer and lifetime, and revokes the old token. */
export async function rotateToken(
  sql: Sql,
  id: string,
  createdBy: string,
): Promise<{ token: string; record: TokenRecord } | undefined> {
  return sql.begin(async (tx) => {
    const [old] = await tx<TokenRecord[]>`
      select ${tx.unsafe(COLUMNS)} from bulkhead_tokens where id = ${id} and revoked_at is null for update`;
    if (!old) return undefined;
    const lifetime = old.expiresAt ? old.expiresAt.getTime() - old.createdAt.getTime() : null;
    const issued = await issueToken(tx as unknown as Sql, {
      kind: old.kind,
      server: old.server,
      label: old.label,
      scopes: old.scopes,
      customerId: old.customerId,
      expiresAt: lifetime === null ? null : new Date(Date.now() + lifetime),
      createdBy,
      rotatedFrom: old.id,
    });
    await tx`update bulkhead_tokens set revoked_at = now() where id = ${id}`;
    return issued;
  });
}

/** Why a token was refused; never shown to the client in detail (it would tell whether the token exists). */
export type TokenRefusal = 'malformed' | 'unknown' | 'wrong_server' | 'expired' | 'revoked';

/** Resolves a presented token for one server. */
export interface TokenVerifier {
  /** On refusal, `label` is set only when the secret matched: a real token, just not valid here or now. */
  verify(
    token: string,
  ): Promise<
    { ok: true; access: Access } | { ok: false; reason: TokenRefusal; tokenId?: string; label?: string }
  >;
  close(): Promise<void>;
}

/**
 * Verifies tokens for `server` (audience `kind`). Every request looks its
 * token up by primary key — no cache — so a revocation or expiry takes effect
 * on the very next request on every replica. (A cache would save ~0.2 ms per
 * request and cost a window in which a revoked token still works.)
 */
export function createTokenVerifier(sql: Sql, server: string, kind: TokenKind = 'mcp'): TokenVerifier {
  const touched = new Map<string, number>();
  return {
    async verify(token) {
      const parsed = parseToken(token);
      if (!parsed) return { ok: false, reason: 'malformed' };
      if (parsed.server !== server) return { ok: false, reason: 'wrong_server', tokenId: parsed.id };
      const [row] = await sql<(TokenRecord & { secretHash: Buffer })[]>`
        select ${sql.unsafe(COLUMNS)}, secret_hash as "secretHash" from bulkhead_tokens where id = ${parsed.id}`;
      if (!row) return { ok: false, reason: 'unknown' };
      const r = row;
      const presented = hashSecret(parsed.secret);
      if (presented.length !== r.secretHash.length || !timingSafeEqual(presented, r.secretHash)) {
        return { ok: false, reason: 'unknown' };
      }
      if (r.server !== server || r.kind !== kind)
        return { ok: false, reason: 'wrong_server', tokenId: r.id, label: r.label };
      const state = tokenState(r);
      if (state !== 'active') return { ok: false, reason: state, tokenId: r.id, label: r.label };
      const last = touched.get(r.id) ?? 0;
      if (Date.now() - last > 60_000) {
        touched.set(r.id, Date.now());
        sql`update bulkhead_tokens set last_used_at = now() where id = ${r.id}`.catch(() =>
          touched.delete(r.id),
        );
      }
      return {
        ok: true,
        access: {
          tokenId: r.id,
          label: r.label,
          server: r.server,
          scopes: r.scopes,
          customerId: r.customerId,
        },
      };
    },
    async close() {},
  };
}
