import { createHash } from 'node:crypto';
import type { TokenKind, TokenState } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';

/** A token as the operators' pages show it (never its secret). */
export interface OperatorToken {
  id: string;
  kind: TokenKind;
  server: string;
  label: string;
  scopes: string[];
  customerId: string | null;
  owner: string | null;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  /** The OAuth grant the token was issued under; null for a token issued by the CLI or the console. */
  grantId: string | null;
  state: TokenState;
}

/** An OAuth grant with its client. A grant has no expiry of its own: it stands until revoked. */
export interface OperatorGrant {
  id: string;
  clientId: string;
  clientName: string | null;
  server: string;
  scopes: string[];
  customerId: string | null;
  owner: string | null;
  grantedBy: string;
  createdAt: Date;
  revokedAt: Date | null;
  revokedReason: string | null;
  state: 'active' | 'revoked';
}

export const TOKEN_STATES = ['active', 'revoked', 'expired', 'all'] as const;

/** What the lists are narrowed to; `person` is compared as the database compares persons. */
export interface TokenFilter {
  q?: string | undefined;
  server?: string | undefined;
  person?: string | undefined;
  state: (typeof TOKEN_STATES)[number];
}

/** Rows a list shows at most; the page says when there were more. */
export const LIST_LIMIT = 500;

/**
 * Tokens matching `filter`, newest first, through `bulkhead_operator_tokens`: the database checks that
 * `operator` is a live approver token with tokens:manage (insufficient_privilege otherwise).
 */
export async function operatorTokens(
  sql: Sql,
  operator: string,
  filter: TokenFilter,
): Promise<OperatorToken[]> {
  const { q, server, person, state } = filter;
  return sql<OperatorToken[]>`
    select * from (
      select id, kind, server, label, scopes, customer_id as "customerId", owner, created_at as "createdAt",
        created_by as "createdBy", expires_at as "expiresAt", revoked_at as "revokedAt",
        last_used_at as "lastUsedAt", grant_id as "grantId",
        case when revoked_at is not null then 'revoked' when expires_at <= now() then 'expired' else 'active' end
          as state
      from bulkhead_operator_tokens(${operator})) t
    where true
    ${server ? sql`and server = ${server}` : sql``}
    ${person ? sql`and owner is not null and bulkhead_same_person(owner, ${person})` : sql``}
    ${state === 'all' ? sql`` : sql`and state = ${state}`}
    ${
      q
        ? sql`and (strpos(lower(label), lower(${q})) > 0 or strpos(lower(coalesce(owner, '')), lower(${q})) > 0
            or strpos(id, lower(${q})) > 0 or strpos(lower(coalesce("grantId", '')), lower(${q})) > 0)`
        : sql``
    }
    order by "createdAt" desc, id
    limit ${LIST_LIMIT + 1}`;
}

/** What an audit event and a notice name of a token. */
export type TokenNames = Pick<OperatorToken, 'id' | 'kind' | 'server' | 'label' | 'owner' | 'grantId'>;

/** One token by id (operators only, as above). */
export async function operatorToken(sql: Sql, operator: string, id: string): Promise<TokenNames | undefined> {
  const [row] = await sql<TokenNames[]>`
    select id, kind, server, label, owner, grant_id as "grantId"
    from bulkhead_operator_tokens(${operator}) where id = ${id}`;
  return row;
}

/**
 * OAuth grants matching `filter`, newest first. The console's role reads grants itself; only the
 * routes behind the operator check call this. A grant is never `expired`.
 */
export async function operatorGrants(sql: Sql, filter: TokenFilter): Promise<OperatorGrant[]> {
  const { q, server, person, state } = filter;
  if (state === 'expired') return [];
  return sql<OperatorGrant[]>`
    select g.id, g.client_id as "clientId", c.client_name as "clientName", g.server, g.scopes,
      g.customer_id as "customerId", g.owner, g.granted_by as "grantedBy", g.created_at as "createdAt",
      g.revoked_at as "revokedAt", g.revoked_reason as "revokedReason",
      case when g.revoked_at is null then 'active' else 'revoked' end as state
    from bulkhead_oauth_grants g join bulkhead_oauth_clients c on c.client_id = g.client_id
    where true
    ${server ? sql`and g.server = ${server}` : sql``}
    ${person ? sql`and g.owner is not null and bulkhead_same_person(g.owner, ${person})` : sql``}
    ${state === 'active' ? sql`and g.revoked_at is null` : state === 'revoked' ? sql`and g.revoked_at is not null` : sql``}
    ${
      q
        ? sql`and (strpos(lower(coalesce(c.client_name, '')), lower(${q})) > 0 or strpos(lower(g.client_id), lower(${q})) > 0
            or strpos(lower(coalesce(g.owner, '')), lower(${q})) > 0 or strpos(lower(g.id), lower(${q})) > 0)`
        : sql``
    }
    order by g.created_at desc, g.id
    limit ${LIST_LIMIT + 1}`;
}

/** Revokes one token (MCP or approver); false when it was unknown or already revoked. */
export async function revokeTokenAsOperator(sql: Sql, operator: string, id: string): Promise<boolean> {
  const [row] = await sql<
    { done: boolean }[]
  >`select bulkhead_operator_revoke_token(${operator}, ${id}) as done`;
  return row!.done;
}

/** Revokes one OAuth grant with its access and refresh tokens; false when unknown or already revoked. */
export async function revokeGrantAsOperator(sql: Sql, operator: string, id: string): Promise<boolean> {
  const [row] = await sql<
    { done: boolean }[]
  >`select bulkhead_operator_revoke_grant(${operator}, ${id}) as done`;
  return row!.done;
}

/**
 * Revokes every live token and grant of `person`; answers how many. A grant's access tokens go with
 * their grant and are not counted among the tokens.
 */
export async function revokePersonAsOperator(
  sql: Sql,
  operator: string,
  person: string,
): Promise<{ tokens: number; grants: number }> {
  const [row] = await sql<{ tokens: number; grants: number }[]>`
    select tokens, grants from bulkhead_operator_revoke_person(${operator}, ${person})`;
  return row!;
}

/**
 * A fingerprint of the live tokens and grants a confirmation page named: the revocation is refused
 * when the person's live tokens and grants differ by then, so that the operator sees again what
 * appeared (or went) since the page was drawn.
 */
export function shownFingerprint(tokens: { id: string }[], grants: { id: string }[]): string {
  const ids = [...tokens.map((t) => `t:${t.id}`), ...grants.map((g) => `g:${g.id}`)].sort();
  return createHash('sha256').update(ids.join('\n')).digest('hex');
}
