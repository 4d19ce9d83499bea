import type { Outcome } from '@bulkhead/audit';
import type { Logger } from '@bulkhead/core';
import type { Party } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import type { Context } from 'hono';
import { auditOf } from '../middleware/request-audit.ts';
import type { Approver } from '../sessions.ts';
import type { IdJagVerifier } from './id-jag.ts';
import type { RegistrationPolicy } from './registration-limit.ts';

/** An MCP server the console grants tokens for: its resource URL is what clients name in `resource`. */
export interface OAuthServer {
  name: string;
  description: string;
  /** The server's MCP URL as its protected-resource metadata names it (`https://admin.example.com/mcp`). */
  resource: string;
  scopes: string[];
  customerBound: boolean;
}

/** What the OAuth routes need from the console. */
export interface OAuthDeps {
  sql: Sql;
  logger: Logger;
  /** The issuer: the console's public URL, without a trailing slash. */
  issuer: string;
  servers: OAuthServer[];
  /** The approver signed in through the browser's session cookie, if any. */
  session(c: Context): Promise<Approver | undefined>;
  /** Reverse proxies in front of the console that append to `X-Forwarded-For` (default 0). */
  proxyHops?: number;
  /** Dynamic registrations allowed per source address and window (default 30 in 10 minutes). */
  registrationPolicy?: RegistrationPolicy;
  /** ID-JAGs of the company's IdP (BULKHEAD_OIDC_ISSUER) accepted as JWT bearer grants, if one is configured. */
  idJag?: IdJagVerifier | undefined;
}

/** Who an OAuth audit event names besides the request's user agent. */
export interface OAuthEventParties {
  /** The event's token: the signed-in approver who acted (granted, denied, was refused), or the token a step issued. */
  by?: Party;
  clientId?: string | null;
}

/** What every OAuth endpoint is handed: the console's dependencies and the one way to audit. */
export interface OAuthContext {
  sql: Sql;
  logger: Logger;
  issuer: string;
  servers: OAuthServer[];
  proxyHops: number;
  idJag: IdJagVerifier | undefined;
  session(c: Context): Promise<Approver | undefined>;
  /**
   * Writes an endpoint's audit event (server `console`, method `oauth/<method>`); a failure to write
   * it is logged, never thrown, so that the client still gets its answer.
   */
  record(
    c: Context,
    method: string,
    outcome: Outcome,
    started: number,
    summary: Record<string, unknown>,
    parties?: OAuthEventParties,
  ): Promise<unknown>;
}

/** An OAuth step no approver took part in (a client's request) names no token. */
const NOBODY: Party = { tokenId: null, label: null };

/** The endpoints' context for the console's dependencies. */
export function createOAuthContext(deps: OAuthDeps): OAuthContext {
  const { sql, logger, issuer, servers, session } = deps;
  return {
    sql,
    logger,
    issuer,
    servers,
    proxyHops: deps.proxyHops ?? 0,
    idJag: deps.idJag,
    session,
    record: (c, method, outcome, started, summary, extra = {}) =>
      auditOf(c)
        .append({
          method: `oauth/${method}`,
          outcome,
          since: started,
          by: extra.by ?? NOBODY,
          arguments: extra.clientId ? { client_id: extra.clientId } : {},
          resultSummary: summary,
        })
        .catch((err: unknown) => logger.error({ err }, 'oauth audit event could not be written')),
  };
}

/** Two resource URLs name the same server whether or not one ends in a slash. */
export function sameResource(a: string, b: string): boolean {
  return a.replace(/\/$/, '') === b.replace(/\/$/, '');
}
