import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { TokenProof, type Access } from '../pipeline/call/access.ts';

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
  /** The person the token was issued to (`--owner`); a person may not approve what their own token asked for. */
  owner: string | null;
  /** The OAuth grant the token was issued under (`bho_…` tokens); null for a token issued by the CLI. */
  grantId: string | null;
}

/** Whether a token can be used now. */
export type TokenState = 'active' | 'expired' | 'revoked';

export function tokenState(t: Pick<TokenRecord, 'expiresAt' | 'revokedAt'>, now = new Date()): TokenState {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && t.expiresAt <= now) return 'expired';
  return 'active';
}

const ID_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';
const TOKEN = /^bh(o?)_([a-z][a-z0-9-]{0,39})_([a-z2-9]{12})_([A-Za-z0-9_-]{43})$/;

function newId(): string {
  const bytes = randomBytes(12);
  return Array.from(bytes, (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join('');
}

function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/**
 * Splits `bh_<server>_<id>_<secret>` (issued by the CLI) or `bho_<server>_<id>_<secret>` (issued
 * under an OAuth grant: `oauth` is true); undefined when the text is not shaped like a token.
 */
export function parseToken(
  token: string,
): { server: string; id: string; secret: string; oauth: boolean } | undefined {
  const m = TOKEN.exec(token);
  return m ? { oauth: m[1] === 'o', server: m[2]!, id: m[3]!, secret: m[4]! } : undefined;
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
  owner?: string | null;
}

const COLUMNS = `id, kind, server, label, scopes, customer_id as "customerId", created_at as "createdAt",
  created_by as "createdBy", expires_at as "expiresAt", revoked_at as "revokedAt", last_used_at as "lastUsedAt",
  rotated_from as "rotatedFrom", owner, grant_id as "grantId"`;

/** Creates a token and returns it with its secret: the only time the secret exists outside the client. */
export async function issueToken(
  sql: Sql,
  options: IssueTokenOptions,
): Promise<{ token: string; record: TokenRecord }> {
  const id = newId();
  const secret = randomBytes(32).toString('base64url');
  const [record] = await sql<TokenRecord[]>`
    insert into bulkhead_tokens (id, kind, server, label, scopes, customer_id, secret_hash, created_by, expires_at,
      rotated_from, owner)
    values (${id}, ${options.kind ?? 'mcp'}, ${options.server}, ${options.label}, ${options.scopes}, ${options.customerId ?? null}, ${hashSecret(secret)},
      ${options.createdBy}, ${options.expiresAt}, ${options.rotatedFrom ?? null}, ${options.owner ?? null})
    returning ${sql.unsafe(COLUMNS)}`;
  return { token: `bh_${options.server}_${id}_${secret}`, record: record! };
}

/**
 * Issues an MCP token as an operator (the console), through `bulkhead_operator_issue_token`: the
 * database checks that `operatorProof` (the operator's approver token or console session secret, never
 * an id) proves a live approver with tokens:manage, and records the token as created by that operator,
 * since the console's role cannot write the token table. The caller checks scopes and customer against
 * the server's manifest, as the CLI does.
 */
export async function issueTokenAsOperator(
  sql: Sql,
  operatorProof: string,
  options: Omit<IssueTokenOptions, 'kind' | 'rotatedFrom' | 'createdBy'>,
): Promise<{ token: string; id: string; createdAt: Date; expiresAt: Date | null }> {
  const id = newId();
  const secret = randomBytes(32).toString('base64url');
  const [row] = await sql<{ createdAt: Date; expiresAt: Date | null }[]>`
    select created_at as "createdAt", expires_at as "expiresAt"
    from bulkhead_operator_issue_token(${operatorProof}, ${id}, ${hashSecret(secret)}, ${options.server}, ${options.label},
      ${options.scopes}, ${options.customerId ?? null}, ${options.owner ?? null}, ${options.expiresAt})`;
  return { token: `bh_${options.server}_${id}_${secret}`, id, ...row! };
}

/**
 * Issues an MCP token to the person a console session proves, through `bulkhead_my_issue_token` ("My
 * tokens"): the database derives the person from `sessionProof` (the session's cookie value, never an id),
 * refuses a server or scopes their groups do not allow them to hold now (insufficient_privilege) and an
 * expiry beyond a year, and records the person as the token's owner. The caller checks scopes and
 * customer against the server's manifest, as the CLI does.
 */
export async function issueTokenAsPerson(
  sql: Sql,
  sessionProof: string,
  options: { server: string; label: string; scopes: string[]; customerId: string | null; expiresAt: Date },
): Promise<{ token: string; id: string; owner: string; createdAt: Date; expiresAt: Date }> {
  const id = newId();
  const secret = randomBytes(32).toString('base64url');
  const [row] = await sql<{ owner: string; createdAt: Date; expiresAt: Date }[]>`
    select owner, created_at as "createdAt", expires_at as "expiresAt"
    from bulkhead_my_issue_token(${sessionProof}, ${id}, ${hashSecret(secret)}, ${options.server}, ${options.label},
      ${options.scopes}, ${options.customerId}, ${options.expiresAt})`;
  return { token: `bh_${options.server}_${id}_${secret}`, id, ...row! };
}

/** What opens a grant's next tokens: its authorization code with the PKCE verifier, or a refresh token. */
export type GrantSecret = { code: string; verifier: string } | { refreshToken: string };

/**
 * Issues the access token and the next refresh token of a live OAuth grant through
 * `bulkhead_oauth_issue_token`, which takes the server, scopes, customer and owner from the grant and
 * redeems `secret` once (the console's role cannot write the token table, and holds no secret of a grant:
 * a grant id alone opens nothing). Refresh tokens are `bhr_<id>_<secret>`; only the secret's hash is kept.
 */
export async function issueGrantToken(
  sql: Sql,
  o: { grantId: string; secret: GrantSecret; label: string; expiresAt: Date; refreshExpiresAt: Date },
): Promise<{
  token: string;
  tokenId: string;
  server: string;
  scopes: string[];
  customerId: string | null;
  refreshToken: string;
  refreshId: string;
}> {
  const id = newId();
  const secret = randomBytes(32).toString('base64url');
  const refreshId = randomBytes(12).toString('base64url');
  const refreshSecret = randomBytes(32).toString('base64url');
  const [presented, verifier] =
    'code' in o.secret ? [o.secret.code, o.secret.verifier] : [o.secret.refreshToken, null];
  const [row] = await sql<{ server: string; scopes: string[]; customerId: string | null }[]>`
    select server, scopes, customer_id as "customerId"
    from bulkhead_oauth_issue_token(${o.grantId}, ${presented}, ${verifier}, ${id}, ${hashSecret(secret)}, ${o.label},
      ${o.expiresAt}, ${refreshId}, ${hashSecret(refreshSecret)}, ${o.refreshExpiresAt})`;
  return {
    token: `bho_${row!.server}_${id}_${secret}`,
    tokenId: id,
    ...row!,
    refreshToken: `bhr_${refreshId}_${refreshSecret}`,
    refreshId,
  };
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

/** The persons named on tokens (`--owner`, `--person`), live or not: for noticing a near-duplicate name. */
export async function tokenPersons(sql: Sql): Promise<string[]> {
  const rows = await sql<{ owner: string }[]>`
    select distinct owner from bulkhead_tokens where owner is not null order by owner`;
  return rows.map((r) => r.owner);
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
      owner: old.owner,
    });
    await tx`update bulkhead_tokens set revoked_at = now() where id = ${id}`;
    return issued;
  });
}

/** Why a token was refused; never shown to the client in detail (it would tell whether the token exists). */
export type TokenRefusal = 'malformed' | 'unknown' | 'wrong_server' | 'expired' | 'revoked';

/** The outcome of checking a presented token. */
export type TokenVerdict =
  | { ok: true; access: Access }
  | { ok: false; reason: TokenRefusal; tokenId?: string; label?: string; oauth?: boolean };

/** Resolves a presented token for one server. */
export interface TokenVerifier {
  /**
   * On refusal, `label` is set only when the secret matched: a real token, just not valid here or now.
   * `lookedUp` is called when the verdict comes from the database (no fresh one cached), with when it began.
   */
  verify(token: string, lookedUp?: (start: number) => void): Promise<TokenVerdict>;
  /** Cache figures since start (for /metrics). */
  readonly stats: { hits: number; misses: number };
  /** Calls `listener` with a token's id when the database announces a change of it; returns how to stop. */
  onChange(listener: (tokenId: string) => void): () => void;
  close(): Promise<void>;
}

/** Options of {@link createTokenVerifier}. */
export interface TokenVerifierOptions {
  /** How long a verdict is reused without asking the database (default 900 ms, at most 1 s). */
  maxAgeMs?: number;
  /** Drop cached verdicts when the database announces a token change (default true). */
  listen?: boolean;
}

interface Cached {
  secretHash: Buffer;
  verdict: TokenVerdict;
  at: number;
}

/**
 * Verifies tokens for `server` (audience `kind`) through `bulkhead_verify_token`, the database
 * function that answers only for the calling role's own server: no server role reads the token table.
 * Verdicts are cached in the process for under a second and dropped at once when the database
 * announces a change of that token (revocation, rotation, expiry) over LISTEN/NOTIFY, so a revoked
 * token is refused on every replica within a second even if a notification is lost. Concurrent
 * requests with the same token share one lookup. The database notes the last use at most once a
 * minute per token.
 */
export function createTokenVerifier(
  sql: Sql,
  server: string,
  kind: TokenKind = 'mcp',
  options: TokenVerifierOptions = {},
): TokenVerifier {
  const maxAge = Math.min(options.maxAgeMs ?? 900, 1000);
  const cache = new Map<string, Cached>();
  const inFlight = new Map<string, Promise<Cached>>();
  const stats = { hits: 0, misses: 0 };
  const changed = new Set<(tokenId: string) => void>();
  const listening =
    options.listen === false
      ? undefined
      : sql.listen(
          'bulkhead_tokens',
          (id) => {
            cache.delete(id);
            for (const listener of changed) listener(id);
          },
          // (Re)connected: anything announced while the connection was down is unknown, so forget all.
          () => cache.clear(),
        );
  listening?.catch(() => {});

  const lookup = async (id: string, secretHash: Buffer): Promise<Cached> => {
    const [row] = await sql<
      {
        status: TokenRefusal | 'ok';
        tokenId: string | null;
        label: string | null;
        server: string;
        owner: string | null;
        scopes: string[];
        customerId: string | null;
      }[]
    >`
      select status, token_id as "tokenId", label, server, owner, scopes, customer_id as "customerId"
      from bulkhead_verify_token(${id}, ${secretHash}, ${server}, ${kind})`;
    const verdict: TokenVerdict =
      row!.status === 'ok'
        ? {
            ok: true,
            access: {
              tokenId: row!.tokenId!,
              label: row!.label!,
              server: row!.server,
              scopes: row!.scopes,
              customerId: row!.customerId,
              owner: row!.owner,
              proof: new TokenProof(id, secretHash),
            },
          }
        : {
            ok: false,
            reason: row!.status,
            ...(row!.tokenId ? { tokenId: row!.tokenId } : {}),
            ...(row!.label !== null ? { label: row!.label } : {}),
          };
    return { secretHash, verdict, at: Date.now() };
  };

  return {
    stats,
    onChange(listener) {
      changed.add(listener);
      return () => changed.delete(listener);
    },
    async verify(token, lookedUp) {
      const parsed = parseToken(token);
      if (!parsed) return { ok: false, reason: 'malformed' };
      if (parsed.server !== server)
        return { ok: false, reason: 'wrong_server', tokenId: parsed.id, oauth: parsed.oauth };
      const presented = hashSecret(parsed.secret);
      const hit = cache.get(parsed.id);
      if (hit && Date.now() - hit.at < maxAge && timingSafeEqual(hit.secretHash, presented)) {
        stats.hits++;
        return hit.verdict.ok ? hit.verdict : { ...hit.verdict, oauth: parsed.oauth };
      }
      stats.misses++;
      const start = performance.now();
      const key = `${parsed.id}:${presented.toString('hex')}`;
      let pending = inFlight.get(key);
      if (!pending) {
        pending = lookup(parsed.id, presented).finally(() => inFlight.delete(key));
        inFlight.set(key, pending);
      }
      const fresh = await pending;
      lookedUp?.(start);
      cache.set(parsed.id, fresh);
      return fresh.verdict.ok ? fresh.verdict : { ...fresh.verdict, oauth: parsed.oauth };
    },
    async close() {
      const l = await listening?.catch(() => undefined);
      await l?.unlisten().catch(() => {});
      cache.clear();
    },
  };
}
