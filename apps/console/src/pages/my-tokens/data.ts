import type { Sql } from '@bulkhead/db';
import type { OAuthServer } from '../../oauth/context.ts';

/** A person's own MCP token as "My tokens" lists it (never its secret). */
export interface MyToken {
  id: string;
  server: string;
  label: string;
  scopes: string[];
  customerId: string | null;
  createdAt: Date;
  createdBy: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
}

/** The signed-in person and what their groups let them hold, as the database reads it now. */
export interface MyRights {
  personId: string;
  name: string | null;
  email: string | null;
  /** The IdP's groups as of their last sign-in (or SCIM's last change). */
  groups: string[];
  /** Those of their groups that are mapped to hold tokens. */
  tokenGroups: string[];
  /** The rights: `server` (every scope) or `server:scope`, as `bulkhead groups add --tokens` wrote them. */
  tokens: string[];
}

/**
 * The person the session proves, with their token rights (`bulkhead_my_rights`: insufficient_privilege
 * when `session` proves no person signed in at the IdP).
 */
export async function myRights(sql: Sql, session: string): Promise<MyRights> {
  const [row] = await sql<MyRights[]>`
    select person_id as "personId", name, email, groups, token_groups as "tokenGroups", tokens
    from bulkhead_my_rights(${session})`;
  return row!;
}

/** The person's live MCP tokens, newest first (`bulkhead_my_tokens`, on the session's proof). */
export async function myTokens(sql: Sql, session: string): Promise<MyToken[]> {
  return sql<MyToken[]>`
    select id, server, label, scopes, customer_id as "customerId", created_at as "createdAt",
      created_by as "createdBy", expires_at as "expiresAt", last_used_at as "lastUsedAt"
    from bulkhead_my_tokens(${session})`;
}

/**
 * Revokes one of the person's own tokens (`bulkhead_my_revoke_token`): undefined when the id names no
 * token of theirs, whoever's it is; `revoked` false when it was revoked already.
 */
export async function revokeMyToken(
  sql: Sql,
  session: string,
  id: string,
): Promise<{ id: string; server: string; label: string; revoked: boolean } | undefined> {
  const [row] = await sql<{ id: string; server: string; label: string; revoked: boolean }[]>`
    select id, server, label, revoked from bulkhead_my_revoke_token(${session}, ${id})`;
  return row;
}

/**
 * The servers the console knows that `rights` let the person hold tokens for, each with the scopes they
 * may choose: every scope for a `server` right, else those of its `server:scope` rights.
 */
export function holdableServers(
  servers: OAuthServer[],
  rights: string[],
): { server: OAuthServer; scopes: string[] }[] {
  return servers
    .map((server) => ({
      server,
      scopes: rights.includes(server.name)
        ? [...server.scopes]
        : server.scopes.filter((s) => rights.includes(`${server.name}:${s}`)),
    }))
    .filter((h) => h.scopes.length > 0);
}
