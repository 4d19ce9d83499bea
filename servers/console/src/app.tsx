/** @jsxImportSource hono/jsx */
import { randomUUID } from 'node:crypto';
import { createAuditWriter, type AuditWriter, type Outcome } from '@bulkhead/audit';
import { bodyAborted, createRefusalLog, type Logger } from '@bulkhead/core';
import {
  APPROVAL_ID,
  APPROVAL_STATUSES,
  ApprovalDecisionError,
  createMetrics,
  metricsRoute,
  approvalDeliveries,
  approvalEvents,
  approvalFacets,
  argumentsHash,
  createTokenVerifier,
  decideApproval,
  getApproval,
  listApprovals,
  listCaughtMail,
  type ApprovalStatus,
  type TokenVerifier,
} from '@bulkhead/core/operator';
import { isReachable, type Sql } from '@bulkhead/db';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { JSX } from 'hono/jsx/jsx-runtime';
import {
  DetailPage,
  HistoryPage,
  LoginPage,
  MessagePage,
  PendingPage,
  SentMailPage,
  STYLE_HASH,
} from './pages.tsx';
import { argumentFindings, argumentRows, findings, mergeFindings } from './shown.tsx';
import {
  countPending,
  createSession,
  deleteSession,
  findSession,
  sameSecret,
  type Approver,
} from './sessions.ts';
import { mintSignInForm, redeemSignInForm, SIGN_IN_FORM_SECONDS } from './sign-in-forms.ts';
import { createSignInThrottle, type SignInPolicy } from './sign-in-throttle.ts';
import { sourceAddress } from './source.ts';
import { mountOAuth, type OAuthServer, type RegistrationPolicy } from './oauth/routes.tsx';

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
  /** `BULKHEAD_ALLOW_SELF_APPROVAL`: a person may approve what a token issued to them asked for. */
  allowSelfApproval?: boolean;
  /** `BULKHEAD_METRICS_TOKEN`: lets a scraper that is not on loopback read `/metrics`. */
  metricsToken?: string | undefined;
  /** The MCP servers the console grants OAuth access to (empty: the authorization server grants nothing). */
  oauthServers?: OAuthServer[];
  /** OAuth dynamic registrations allowed per source address and window (default 30 in 10 minutes). */
  registrationPolicy?: RegistrationPolicy;
}

/** The console app and how to release what it holds. */
export interface ConsoleApp {
  app: Hono<{ Variables: { approver: Approver } }>;
  close(): Promise<void>;
}

type Ctx = Context<{ Variables: { approver: Approver } }>;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const OAUTH_API = /^\/oauth\/(token|register|revoke)$/;

/** The audit method of a form a POST was refused for: the method its own event would have. */
function formMethod(path: string): string {
  if (path === '/oauth/authorize') return 'oauth/authorize';
  if (/^\/approvals\/[^/]+\/decide$/.test(path)) return 'approvals/decide';
  if (path === '/logout') return 'console/logout';
  return 'console/form';
}

/** Where to go after signing in: only back to an OAuth authorization request of this console. */
function nextPath(value: string | undefined): string | undefined {
  return value && value.startsWith('/oauth/authorize?') ? value : undefined;
}
const FORM_LIMIT = 64 * 1024;

function hostname(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  return host.split(':')[0]!.toLowerCase();
}

function page(c: Context, element: JSX.Element, status = 200) {
  return c.html(html`<!doctype html>${element}`, status as 200);
}

function field(form: Record<string, unknown>, name: string): string | undefined {
  const v = form[name];
  return typeof v === 'string' ? v : undefined;
}

/** Every value the browser sent for cookie `name`: a cookie planted from another port may sit beside ours. */
function cookieValues(header: string | undefined, name: string): string[] {
  return (header ?? '')
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.startsWith(`${name}=`))
    .map((p) => p.slice(name.length + 1));
}

/** Why a sign-in was refused, as the audit event and the log record it. */
type SignInRefusal =
  | 'cross_origin'
  | 'cross_site'
  | 'form_not_valid'
  | 'malformed'
  | 'unknown'
  | 'wrong_server'
  | 'expired'
  | 'revoked'
  | 'malformed_header';

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
  const verifier: TokenVerifier = createTokenVerifier(sql, 'console', 'approver');
  const metrics = createMetrics({
    server: 'console',
    sql,
    poolMax: 10,
    tokenCache: verifier.stats,
    approvals: true,
  });
  const audit = metrics.audited(options.audit ?? createAuditWriter(sql));
  // Anyone can post from another site: the first refusals of a minute per source are audited one
  // by one, the rest summed up, as the MCP servers do with requests that carry no valid token.
  const refusals = createRefusalLog(audit, 'console', logger);
  const publicUrl = new URL(options.publicUrl);
  const secure = publicUrl.protocol === 'https:';
  const SESSION = secure ? '__Host-bh_session' : 'bh_session';
  const LOGIN = secure ? '__Host-bh_login' : 'bh_login';
  const hours = options.sessionHours ?? 12;
  const hosts = new Set([...LOOPBACK, publicUrl.hostname, ...(options.allowedHosts ?? [])]);
  const cookie = { httpOnly: true, sameSite: 'Strict', path: '/', secure } as const;
  const proxyHops = options.proxyHops ?? 0;
  const throttle = createSignInThrottle(sql, options.signInPolicy);
  const { failures: limit, windowSeconds } = throttle.policy;

  /**
   * Why a POST did not come from one of the console's own pages, if it did not. `Origin` names the
   * page's origin, port included; `Sec-Fetch-Site` tells a page on another port of this host
   * (`same-site`, which SameSite cookies let through) from the console's own (`same-origin`).
   */
  const foreignPost = (c: Context): 'cross_origin' | 'cross_site' | undefined => {
    const origin = c.req.header('origin');
    if (origin !== undefined && origin !== new URL(c.req.url).origin && origin !== publicUrl.origin)
      return 'cross_origin';
    const site = c.req.header('sec-fetch-site');
    if (site !== undefined && site !== 'same-origin') return 'cross_site';
    return undefined;
  };

  /** Writes a sign-in's audit event (server `console`, method `console/sign-in`); never the token itself. */
  const auditSignIn = (
    c: Context,
    started: number,
    outcome: Outcome,
    summary: Record<string, unknown>,
    token: { tokenId?: string | undefined; label?: string | undefined } = {},
  ) =>
    audit.append({
      server: 'console',
      method: 'console/sign-in',
      outcome,
      requestId: randomUUID(),
      durationMs: performance.now() - started,
      tokenId: token.tokenId ?? null,
      tokenLabel: token.label ?? null,
      clientName: c.req.header('user-agent')?.slice(0, 200) ?? null,
      arguments: { source: sourceAddress(c, proxyHops) },
      resultSummary: summary,
    });

  /** 429 for a source over the limit: the page says when to come back, and so does `Retry-After`. */
  const throttled = (c: Context, retryAfter: number) => {
    c.header('Retry-After', String(retryAfter));
    return page(
      c,
      <MessagePage
        title="Too many failed sign-ins"
        message={`More than ${limit} sign-ins from your address failed within ${windowSeconds} seconds. Try again in ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`}
      />,
      429,
    );
  };

  const app = new Hono<{ Variables: { approver: Approver } }>();

  app.use(async (c, next) => {
    await next();
    // The consent page sets its own, which lets its form answer go back to the client.
    if (!c.res.headers.has('Content-Security-Policy'))
      c.header(
        'Content-Security-Policy',
        `default-src 'none'; style-src ${STYLE_HASH}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      );
    c.header('X-Frame-Options', 'DENY');
    c.header('X-Content-Type-Options', 'nosniff');
    // Not no-referrer: with it browsers send `Origin: null` on form posts, and the origin check below needs it.
    c.header('Referrer-Policy', 'same-origin');
    c.header('Cache-Control', 'no-store');
  });
  app.use(async (c, next) => {
    const host = c.req.header('host');
    if (!host || !hosts.has(hostname(host))) return c.text('Host not allowed.', 403);
    // Forms are only accepted from the console's own pages (SameSite=Strict and CSRF tokens stand behind
    // this). The sign-in form checks the same itself, so that a refused sign-in is counted and audited.
    // The OAuth token, registration and revocation endpoints are APIs for clients, browser-based ones too.
    const foreign =
      c.req.method === 'POST' && c.req.path !== '/login' && !OAUTH_API.test(c.req.path)
        ? foreignPost(c)
        : undefined;
    if (foreign) {
      const source = sourceAddress(c, proxyHops);
      const id = /^\/approvals\/([^/]{1,100})\/decide$/.exec(c.req.path)?.[1];
      await refusals
        .record(
          {
            server: 'console',
            method: formMethod(c.req.path),
            outcome: 'forbidden',
            requestId: randomUUID(),
            durationMs: 0,
            clientName: c.req.header('user-agent')?.slice(0, 200) ?? null,
            arguments: { source, ...(id ? { approval_id: id } : {}) },
            resultSummary: {
              reason: foreign,
              path: c.req.path.slice(0, 200),
              origin: c.req.header('origin')?.slice(0, 200) ?? null,
              sec_fetch_site: c.req.header('sec-fetch-site')?.slice(0, 50) ?? null,
            },
          },
          { authenticated: false, source },
        )
        .catch((err: unknown) =>
          logger.error({ err }, 'audit event for a refused form could not be written'),
        );
      logger.info({ source, reason: foreign, path: c.req.path }, 'cross-origin form refused');
      return c.text('Cross-origin form refused.', 403);
    }
    return next();
  });
  app.use(bodyLimit({ maxSize: FORM_LIMIT, onError: (c) => c.text('Form too large.', 413) }));

  app.get('/healthz', (c) => c.json({ status: 'ok', server: 'console' }));
  // The client's address, not a proxy's: behind a proxy on the same host every request is loopback.
  app.get(
    '/metrics',
    metricsRoute(metrics, options.metricsToken, (c) => sourceAddress(c, proxyHops)),
  );
  app.get('/readyz', async (c) =>
    (await isReachable(sql, 2000))
      ? c.json({ status: 'ready', server: 'console' })
      : c.json({ status: 'unavailable', server: 'console', reason: 'database unreachable' }, 503),
  );

  /** The sign-in form with a freshly minted single-use nonce, its binding in the sign-in cookie. */
  const loginForm = async (c: Ctx, error?: string, status = 200, next?: string) => {
    const form = await mintSignInForm(sql, sourceAddress(c, proxyHops));
    setCookie(c, LOGIN, form.binding, { ...cookie, maxAge: SIGN_IN_FORM_SECONDS });
    return page(c, <LoginPage csrf={form.nonce} error={error} next={next} />, status);
  };

  app.get('/login', async (c) => {
    const next = nextPath(c.req.query('next'));
    const sid = getCookie(c, SESSION);
    if (sid && (await findSession(sql, sid))) return c.redirect(next ?? '/', 303);
    return loginForm(c, undefined, 200, next);
  });

  // A sign-in is counted against its source before anything is checked, and given back if it succeeds.
  // Every refusal — from another site, with a form the console did not mint, with a token that does not
  // open the console — is audited; past the limit, attempts get 429 and one audit event per window.
  app.post('/login', async (c) => {
    const started = performance.now();
    const source = sourceAddress(c, proxyHops);
    const slot = await throttle.reserve(source);
    if (!slot.ok) {
      if (slot.firstInWindow)
        await auditSignIn(c, started, 'rate_limited', {
          reason: 'too_many_failures',
          retry_after_s: slot.retryAfterSeconds,
          limit: `${limit} per ${windowSeconds} s`,
        });
      logger.warn({ source, retryAfter: slot.retryAfterSeconds }, 'console sign-in throttled');
      return throttled(c, slot.retryAfterSeconds);
    }
    const refused = async (
      reason: SignInRefusal,
      outcome: Outcome,
      token: { tokenId?: string | undefined; label?: string | undefined } = {},
    ) => {
      await auditSignIn(c, started, outcome, { reason }, token);
      logger.info({ source, reason, presentedTokenId: token.tokenId }, 'console sign-in refused');
    };
    const foreign = foreignPost(c);
    if (foreign) {
      await refused(foreign, 'forbidden');
      return c.text('Cross-origin form refused.', 403);
    }
    const form = await c.req.parseBody();
    const next = nextPath(field(form, 'next'));
    if (
      !(await redeemSignInForm(sql, field(form, '_csrf') ?? '', cookieValues(c.req.header('cookie'), LOGIN)))
    ) {
      await refused('form_not_valid', 'bad_request');
      return loginForm(c, 'The sign-in form had expired. Please enter your token again.', 400, next);
    }
    const verdict = await verifier.verify(field(form, 'token')?.trim() ?? '');
    if (!verdict.ok) {
      await refused(verdict.reason, 'unauthorized', verdict);
      return loginForm(
        c,
        'This token does not open the console: it is unknown, expired, revoked, or not an approver token.',
        401,
        next,
      );
    }
    await throttle.release(source, slot.slot);
    const sid = await createSession(sql, verdict.access.tokenId, hours);
    await auditSignIn(c, started, 'ok', { session_hours: hours }, verdict.access);
    deleteCookie(c, LOGIN, { path: '/', secure });
    setCookie(c, SESSION, sid, { ...cookie, maxAge: Math.round(hours * 3600) });
    logger.info({ tokenId: verdict.access.tokenId, label: verdict.access.label }, 'approver signed in');
    return c.redirect(next ?? '/', 303);
  });

  mountOAuth(app, {
    sql,
    logger,
    audit,
    issuer: publicUrl.origin + publicUrl.pathname.replace(/\/$/, ''),
    servers: options.oauthServers ?? [],
    proxyHops,
    ...(options.registrationPolicy ? { registrationPolicy: options.registrationPolicy } : {}),
    session: async (c) => {
      const sid = getCookie(c, SESSION);
      return sid ? findSession(sql, sid) : undefined;
    },
  });

  // Everything below needs an approver.
  app.use(async (c, next) => {
    const authorization = c.req.header('authorization');
    if (authorization !== undefined) {
      // A bearer token is a sign-in too: counted, throttled and audited like the form.
      const started = performance.now();
      const source = sourceAddress(c, proxyHops);
      const slot = await throttle.reserve(source);
      if (!slot.ok) {
        if (slot.firstInWindow)
          await auditSignIn(c, started, 'rate_limited', {
            reason: 'too_many_failures',
            via: 'bearer',
            retry_after_s: slot.retryAfterSeconds,
            limit: `${limit} per ${windowSeconds} s`,
          });
        return throttled(c, slot.retryAfterSeconds);
      }
      const bearer = authorization.match(/^Bearer ([^\s]+)$/i)?.[1];
      const verdict = bearer ? await verifier.verify(bearer) : undefined;
      if (!verdict?.ok) {
        const reason: SignInRefusal = verdict?.reason ?? 'malformed_header';
        await auditSignIn(c, started, 'unauthorized', { reason, via: 'bearer' }, verdict ?? {});
        logger.info({ source, reason }, 'console request refused');
        c.header('WWW-Authenticate', 'Bearer realm="console", error="invalid_token"');
        return page(
          c,
          <MessagePage
            title="Not an approver token"
            message="The console opens only with an approver token; MCP tokens are never valid here."
          />,
          401,
        );
      }
      await throttle.release(source, slot.slot);
      c.set('approver', {
        tokenId: verdict.access.tokenId,
        label: verdict.access.label,
        owner: verdict.access.owner ?? null,
        csrf: null,
      });
      return next();
    }
    const sid = getCookie(c, SESSION);
    const approver = sid ? await findSession(sql, sid) : undefined;
    if (!approver) {
      if (sid) deleteCookie(c, SESSION, { path: '/', secure });
      if (c.req.method === 'GET' || c.req.method === 'HEAD') return c.redirect('/login', 303);
      return page(
        c,
        <MessagePage title="Signed out" message="Your session has ended; sign in again." />,
        401,
      );
    }
    c.set('approver', approver);
    if (c.req.method === 'POST') {
      const given = field(await c.req.parseBody(), '_csrf');
      if (!given || !sameSecret(given, approver.csrf!))
        return page(
          c,
          <MessagePage
            title="Form refused"
            message="The form did not carry this session's security token. Go back, reload the page and try again."
            approver={approver}
          />,
          403,
        );
    }
    return next();
  });

  app.get('/', async (c) => {
    const { approvals, truncated } = await listApprovals(sql, {
      status: 'pending',
      limit: 100,
      order: 'oldest',
    });
    const cards = approvals.map((approval) => {
      const rows = argumentRows(approval.arguments, approval.argumentsRedacted);
      return {
        approval,
        rows,
        findings: mergeFindings([findings(approval.preview), argumentFindings(rows)]),
      };
    });
    return page(c, <PendingPage approver={c.var.approver} approvals={cards} truncated={truncated} />);
  });

  const detail = async (
    c: Ctx,
    id: string,
    extra: { error?: string; reason?: string; decided?: boolean } = {},
    status = 200,
  ) => {
    const approval = APPROVAL_ID.test(id) ? await getApproval(sql, id) : undefined;
    if (!approval)
      return page(
        c,
        <MessagePage title="Not found" message={`There is no approval ${id}.`} approver={c.var.approver} />,
        404,
      );
    const [events, deliveries, pending] = await Promise.all([
      approvalEvents(sql, id),
      approvalDeliveries(sql, id),
      countPending(sql),
    ]);
    return page(
      c,
      <DetailPage
        approver={c.var.approver}
        pending={pending}
        approval={approval}
        rows={argumentRows(approval.arguments, approval.argumentsRedacted)}
        shownHash={argumentsHash(approval.arguments)}
        events={events}
        deliveries={deliveries}
        {...extra}
      />,
      status,
    );
  };

  app.get('/approvals/:id', (c) => detail(c, c.req.param('id'), { decided: c.req.query('decided') === '1' }));

  app.post('/approvals/:id/decide', async (c) => {
    const id = c.req.param('id');
    const form = await c.req.parseBody();
    const decision = field(form, 'decision');
    const reason = field(form, 'reason') ?? '';
    if (decision !== 'approve' && decision !== 'reject')
      return detail(c, id, { error: 'Choose Approve or Reject.', reason }, 400);
    const approver = c.var.approver;
    // The hash of the arguments the page showed: without it, arguments changed after the page was
    // drawn would be approved as changed.
    const hash = field(form, 'hash');
    if (!hash || !/^[0-9a-f]{64}$/.test(hash))
      return detail(
        c,
        id,
        {
          error:
            'The form did not say which arguments you were shown. Reload the page, review it and decide again.',
          reason,
        },
        400,
      );
    try {
      await decideApproval(sql, audit, {
        id,
        decision,
        reason,
        via: 'console',
        approver: { tokenId: approver.tokenId, label: approver.label, owner: approver.owner },
        expectedHash: hash,
        allowSelfApproval: options.allowSelfApproval ?? false,
      });
    } catch (err) {
      if (!(err instanceof ApprovalDecisionError)) throw err;
      const status = {
        unknown: 404,
        invalid: 400,
        reason_required: 400,
        decided: 409,
        expired: 409,
        withdrawn: 409,
        changed: 409,
        self_approval: 403,
      }[err.code];
      const sentence = err.message.charAt(0).toUpperCase() + err.message.slice(1);
      return detail(c, id, { error: `${sentence}.`, reason }, status);
    }
    logger.info({ approvalId: id, decision, by: approver.label }, 'decision recorded');
    return c.redirect(`/approvals/${id}?decided=1`, 303);
  });

  app.get('/history', async (c) => {
    const q = c.req.query();
    const status = (APPROVAL_STATUSES as readonly string[]).includes(q.status ?? '')
      ? (q.status as ApprovalStatus)
      : undefined;
    const server = q.server && q.server.length <= 100 ? q.server : undefined;
    const tool = q.tool && q.tool.length <= 100 ? q.tool : undefined;
    const [{ approvals, truncated }, facets, pending] = await Promise.all([
      listApprovals(sql, {
        limit: 100,
        ...(status ? { status } : {}),
        ...(server ? { server } : {}),
        ...(tool ? { tool } : {}),
      }),
      approvalFacets(sql),
      countPending(sql),
    ]);
    return page(
      c,
      <HistoryPage
        approver={c.var.approver}
        pending={pending}
        approvals={approvals}
        truncated={truncated}
        filter={{ status, server, tool }}
        servers={facets.servers}
        tools={facets.tools}
      />,
    );
  });

  app.get('/mail', async (c) => {
    const limit = 50;
    const [mails, pending] = await Promise.all([listCaughtMail(sql, limit), countPending(sql)]);
    return page(c, <SentMailPage approver={c.var.approver} pending={pending} mails={mails} limit={limit} />);
  });

  app.post('/logout', async (c) => {
    const sid = getCookie(c, SESSION);
    if (sid) await deleteSession(sql, sid);
    deleteCookie(c, SESSION, { path: '/', secure });
    return c.redirect('/login', 303);
  });

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
