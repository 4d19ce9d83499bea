import type { AuditWriter } from '@bulkhead/audit';
import type { Logger } from '@bulkhead/core';
import type { TokenVerifier } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import type { Context } from 'hono';
import type { ConsoleAudit } from './middleware/request-audit.ts';
import type { OAuthServer } from './oauth/context.ts';
import type { OidcClient } from './oidc/client.ts';
import type { SignInThrottle } from './pages/sign-in/throttle.ts';
import type { Approver } from './sessions.ts';

/**
 * What a console request carries: the owner of its audit events (from the first middleware on), and
 * its approver, once the approver middleware has found one.
 */
export type ConsoleEnv = { Variables: { approver: Approver; audit: ConsoleAudit } };

/** A request to the console. */
export type ConsoleRequest = Context<ConsoleEnv>;

/** The console's cookies: their names (`__Host-` on https) and the attributes every one is set with. */
export interface ConsoleCookies {
  session: string;
  login: string;
  /** Binds a sign-in at the IdP to the browser that started it (SameSite=Lax: the IdP sends it back). */
  oidc: string;
  attributes: { httpOnly: true; sameSite: 'Strict'; path: '/'; secure: boolean };
}

/** What the console's middleware and routes are handed, built once in `createConsoleApp`. */
export interface ConsoleContext {
  sql: Sql;
  logger: Logger;
  /** The audit writer, counted by the console's metrics. */
  audit: AuditWriter;
  /** Judges approver tokens (never MCP tokens). */
  verifier: TokenVerifier;
  throttle: SignInThrottle;
  /** The console's address as approvers reach it. */
  publicUrl: URL;
  /** Reverse proxies in front of the console that append to `X-Forwarded-For`. */
  proxyHops: number;
  /** How long a sign-in lasts. */
  sessionHours: number;
  allowSelfApproval: boolean;
  /** The sealer's key, when the console is given it: event pages then verify events against their seals. */
  auditKey: string | undefined;
  cookies: ConsoleCookies;
  /** The MCP servers, with their MCP URL, scopes and customer binding: operators issue tokens for these. */
  servers: OAuthServer[];
  /** The company's OpenID Provider, when people sign in there (`BULKHEAD_OIDC_ISSUER`). */
  oidc: OidcClient | undefined;
  /** Approver tokens open the console (`BULKHEAD_CONSOLE_TOKEN_SIGN_IN`, default on). */
  tokenSignIn: boolean;
}
