import { createAuditWriter, type AuditWriter } from '@bulkhead/audit';
import { bodyAborted, createRefusalLog, type Logger } from '@bulkhead/core';
import { createMetrics, createTokenVerifier } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { getCookie } from 'hono/cookie';
import type { ConsoleContext, ConsoleEnv } from './context.ts';
import { requireApprover } from './middleware/approver.tsx';
import { requireOperator } from './middleware/operator.tsx';
import { ownOrigin } from './middleware/own-origin.ts';
import { requestAudit } from './middleware/request-audit.ts';
import { securityHeaders } from './middleware/security-headers.ts';
import type { OAuthServer } from './oauth/context.ts';
import { createOidcClient, type OidcSettings } from './oidc/client.ts';
import type { RegistrationPolicy } from './oauth/registration-limit.ts';
import { createIdJagVerifier } from './oauth/id-jag.ts';
import { mountOAuth } from './oauth/routes.ts';
import { mountApprovals } from './pages/approval/route.tsx';
import { mountAuditLog } from './pages/audit-log/route.tsx';
import { mountCharts } from './pages/charts/route.tsx';
import { mountHistory } from './pages/history/route.tsx';
import { mountIssueToken } from './pages/issue-token/route.tsx';
import { mountPending } from './pages/pending/route.tsx';
import { mountRevokePerson } from './pages/revoke-person/route.tsx';
import { mountMail } from './pages/sent-mail/route.tsx';
import { mountMyTokens } from './pages/my-tokens/route.tsx';
import { mountGroups } from './pages/groups/route.tsx';
import { mountOidcSignIn } from './pages/sign-in/oidc-route.tsx';
import { mountSignIn } from './pages/sign-in/route.tsx';
import { mountSignOut } from './pages/sign-in/sign-out-route.ts';
import { createSignInThrottle, type SignInPolicy } from './pages/sign-in/throttle.ts';
import { mountTokens } from './pages/tokens/route.tsx';
import { mountTools } from './pages/tools/route.tsx';
import { mountPins } from './pages/pins/route.tsx';
import { mountProbes } from './probes.ts';
import { mountScim } from './scim/index.ts';
import { findSession } from './sessions.ts';

/** What the console needs. */
export interface ConsoleOptions {
  sql: Sql;
  logger: Logger;
  /** The console's address as approvers reach it; https turns on Secure cookies. */
  publicUrl: string;
  /** How long a sign-in lasts (default 12 h). */
  sessionHours?: number;
  /** Extra allowed `Host` names; loopback names and the public URL's host are always allowed. */
  allowedHosts?: string[];
  /** Reverse proxies in front of the console that append to `X-Forwarded-For` (default 0: the socket's address). */
  proxyHops?: number;
  /** Refused sign-ins allowed per source address and window (default 10 per 60 s). */
  signInPolicy?: SignInPolicy;
  audit?: AuditWriter;
  /**
   * `BULKHEAD_ALLOW_SELF_APPROVAL`, as the console was started with. The database decides by the owner's
   * switch (`bulkhead_settings`, set by `bulkhead start`), which the console's login cannot change.
   */
  allowSelfApproval?: boolean;
  /** `BULKHEAD_METRICS_TOKEN`: lets a scraper that is not on loopback read `/metrics`. */
  metricsToken?: string | undefined;
  /**
   * The MCP servers the console grants OAuth access to and operators issue tokens for (empty: the
   * authorization server grants nothing, and operators issue no tokens here).
   */
  oauthServers?: OAuthServer[];
  /** OAuth dynamic registrations allowed per source address and window (default 30 in 10 minutes). */
  registrationPolicy?: RegistrationPolicy;
  /** `BULKHEAD_AUDIT_KEY`: the sealer's key, with which the audit log's event pages verify each event. */
  auditKey?: string | undefined;
  /** The company's OpenID Provider (`BULKHEAD_OIDC_*`): people sign in there, with rights from their groups. */
  oidc?: OidcSettings | undefined;
  /** `BULKHEAD_CONSOLE_TOKEN_SIGN_IN`: approver tokens open the console (default true). */
  tokenSignIn?: boolean;
  /** `BULKHEAD_SCIM_TOKEN`: the IdP's SCIM client's bearer; unset, /scim/v2 answers 404. */
  scimToken?: string | undefined;
}

/** The console app and how to release what it holds. */
export interface ConsoleApp {
  app: Hono<ConsoleEnv>;
  close(): Promise<void>;
}

const FORM_LIMIT = 64 * 1024;

/**
 * The approvers' web console: server-rendered pages, no JavaScript. Approvers
 * sign in with approver tokens (never MCP tokens); the session cookie is
 * HttpOnly and SameSite=Strict (and Secure on https); every form carries a
 * CSRF token; every POST must come from the console's own origin. A request
 * with an `Authorization` header is judged by that token alone: anything but
 * a valid approver token is 401.
 */
export function createConsoleApp(options: ConsoleOptions): ConsoleApp {
  const { sql, logger } = options;
  const verifier = createTokenVerifier(sql, 'console', 'approver');
  const metrics = createMetrics({
    server: 'console',
    sql,
    poolMax: 10,
    tokenCache: verifier.stats,
    approvals: true,
  });
  const audit = metrics.countingAuditWriter(options.audit ?? createAuditWriter(sql));
  // Anyone can post from another site: the first refusals of a minute per source are audited one
  // by one, the rest summed up, as the MCP servers do with requests that carry no valid token.
  const refusals = createRefusalLog(audit, 'console', logger);
  const publicUrl = new URL(options.publicUrl);
  const secure = publicUrl.protocol === 'https:';
  const ctx: ConsoleContext = {
    sql,
    logger,
    audit,
    verifier,
    throttle: createSignInThrottle(sql, options.signInPolicy),
    publicUrl,
    proxyHops: options.proxyHops ?? 0,
    sessionHours: options.sessionHours ?? 12,
    allowSelfApproval: options.allowSelfApproval ?? false,
    auditKey: options.auditKey,
    cookies: {
      session: secure ? '__Host-bh_session' : 'bh_session',
      login: secure ? '__Host-bh_login' : 'bh_login',
      oidc: secure ? '__Host-bh_oidc' : 'bh_oidc',
      attributes: { httpOnly: true, sameSite: 'Strict', path: '/', secure },
    },
    servers: options.oauthServers ?? [],
    oidc: options.oidc ? createOidcClient(options.oidc) : undefined,
    tokenSignIn: options.tokenSignIn ?? true,
  };

  const app = new Hono<ConsoleEnv>();
  app.use(securityHeaders);
  // One request id for every event the request writes, from the first refusal on.
  app.use(requestAudit(audit));
  app.use(ownOrigin(ctx, options.allowedHosts ?? [], refusals));
  app.use(bodyLimit({ maxSize: FORM_LIMIT, onError: (c) => c.text('Form too large.', 413) }));
  mountProbes(app, ctx, metrics, options.metricsToken);
  mountSignIn(app, ctx);
  mountOidcSignIn(app, ctx);
  mountOAuth(app, {
    sql,
    logger,
    issuer: publicUrl.origin + publicUrl.pathname.replace(/\/$/, ''),
    servers: ctx.servers,
    proxyHops: ctx.proxyHops,
    idJag: options.oidc ? createIdJagVerifier(options.oidc.issuer) : undefined,
    ...(options.registrationPolicy ? { registrationPolicy: options.registrationPolicy } : {}),
    session: async (c) => {
      const sid = getCookie(c, ctx.cookies.session);
      return sid ? findSession(sql, sid, ctx.tokenSignIn) : undefined;
    },
  });
  // The IdP's SCIM client authenticates with its own bearer, never as an approver.
  mountScim(app, ctx, options.scimToken, options.oidc?.issuer ?? null);
  // Everything below needs an approver.
  app.use(requireApprover(ctx));
  mountPending(app, ctx);
  mountApprovals(app, ctx);
  mountHistory(app, ctx);
  mountMail(app, ctx);
  mountSignOut(app, ctx);
  // A person's own tokens (signed in by OpenID Connect).
  mountMyTokens(app, ctx);
  // Everything under /operator needs an operator (403 and audited otherwise).
  app.use('/operator/*', requireOperator(ctx));
  mountTokens(app, ctx);
  mountIssueToken(app, ctx);
  mountRevokePerson(app, ctx);
  mountAuditLog(app, ctx);
  mountCharts(app, ctx);
  mountTools(app, ctx);
  mountGroups(app, ctx);
  mountPins(app, ctx);

  app.notFound((c) => c.text('Not found.', 404));
  app.onError((err, c) => {
    if (bodyAborted(err, c.req.raw)) {
      // The client's doing, not the console's: no stack trace, and nobody is there to read the answer.
      logger.info({ path: c.req.path, method: c.req.method }, 'client closed the connection mid-body');
      return c.text('The request body ended early.', 400);
    }
    logger.error({ err }, 'console request failed');
    return c.text('Something went wrong; the details are in the console log.', 500);
  });

  return {
    app,
    close: async () => {
      await refusals.close();
      await verifier.close();
    },
  };
}
