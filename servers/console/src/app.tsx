/** @jsxImportSource hono/jsx */
import { createAuditWriter, type AuditWriter } from '@bulkhead/audit';
import {
  APPROVAL_ID,
  APPROVAL_STATUSES,
  ApprovalDecisionError,
  approvalDeliveries,
  approvalEvents,
  approvalFacets,
  createTokenVerifier,
  decideApproval,
  getApproval,
  listApprovals,
  type ApprovalStatus,
  type Logger,
  type TokenVerifier,
} from '@bulkhead/core';
import { isReachable, type Sql } from '@bulkhead/db';
import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { html } from 'hono/html';
import type { JSX } from 'hono/jsx/jsx-runtime';
import { DetailPage, HistoryPage, LoginPage, MessagePage, PendingPage, STYLE_HASH } from './pages.tsx';
import {
  countPending,
  createSession,
  deleteSession,
  findSession,
  randomToken,
  sameSecret,
  type Approver,
} from './sessions.ts';

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
  audit?: AuditWriter;
}

/** The console app and how to release what it holds. */
export interface ConsoleApp {
  app: Hono<{ Variables: { approver: Approver } }>;
  close(): Promise<void>;
}

type Ctx = Context<{ Variables: { approver: Approver } }>;

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
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
  const audit = options.audit ?? createAuditWriter(sql);
  const verifier: TokenVerifier = createTokenVerifier(sql, 'console', 'approver');
  const publicUrl = new URL(options.publicUrl);
  const secure = publicUrl.protocol === 'https:';
  const SESSION = secure ? '__Host-bh_session' : 'bh_session';
  const LOGIN = secure ? '__Host-bh_login' : 'bh_login';
  const hours = options.sessionHours ?? 12;
  const hosts = new Set([...LOOPBACK, publicUrl.hostname, ...(options.allowedHosts ?? [])]);
  const cookie = { httpOnly: true, sameSite: 'Strict', path: '/', secure } as const;

  const app = new Hono<{ Variables: { approver: Approver } }>();

  app.use(async (c, next) => {
    await next();
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
    if (c.req.method === 'POST') {
      // Forms are only accepted from the console's own pages (SameSite=Strict and CSRF tokens stand behind this).
      const origin = c.req.header('origin');
      const own = new URL(c.req.url).origin;
      if (origin !== undefined && origin !== own && origin !== publicUrl.origin)
        return c.text('Cross-origin form refused.', 403);
    }
    return next();
  });
  app.use(bodyLimit({ maxSize: FORM_LIMIT, onError: (c) => c.text('Form too large.', 413) }));

  app.get('/healthz', (c) => c.json({ status: 'ok', server: 'console' }));
  app.get('/readyz', async (c) =>
    (await isReachable(sql, 2000))
      ? c.json({ status: 'ready', server: 'console' })
      : c.json({ status: 'unavailable', server: 'console', reason: 'database unreachable' }, 503),
  );

  const loginForm = (c: Ctx, error?: string, status = 200) => {
    const csrf = randomToken();
    setCookie(c, LOGIN, csrf, { ...cookie, maxAge: 3600 });
    return page(c, <LoginPage csrf={csrf} error={error} />, status);
  };

  app.get('/login', async (c) => {
    const sid = getCookie(c, SESSION);
    if (sid && (await findSession(sql, sid))) return c.redirect('/', 303);
    return loginForm(c);
  });

  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const expected = getCookie(c, LOGIN);
    const given = field(form, '_csrf');
    if (!expected || !given || !sameSecret(expected, given))
      return loginForm(c, 'The sign-in form had expired. Please enter your token again.', 400);
    const token = field(form, 'token')?.trim() ?? '';
    const verdict = await verifier.verify(token);
    if (!verdict.ok) {
      logger.info({ reason: verdict.reason, presentedTokenId: verdict.tokenId }, 'console sign-in refused');
      return loginForm(
        c,
        'This token does not open the console: it is unknown, expired, revoked, or not an approver token.',
        401,
      );
    }
    const sid = await createSession(sql, verdict.access.tokenId, hours);
    deleteCookie(c, LOGIN, { path: '/', secure });
    setCookie(c, SESSION, sid, { ...cookie, maxAge: Math.round(hours * 3600) });
    logger.info({ tokenId: verdict.access.tokenId, label: verdict.access.label }, 'approver signed in');
    return c.redirect('/', 303);
  });

  // Everything below needs an approver.
  app.use(async (c, next) => {
    const authorization = c.req.header('authorization');
    if (authorization !== undefined) {
      const bearer = authorization.match(/^Bearer ([^\s]+)$/i)?.[1];
      const verdict = bearer ? await verifier.verify(bearer) : undefined;
      if (!verdict?.ok) {
        logger.info({ reason: verdict?.reason ?? 'malformed_header' }, 'console request refused');
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
      c.set('approver', { tokenId: verdict.access.tokenId, label: verdict.access.label, csrf: null });
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
    return page(c, <PendingPage approver={c.var.approver} approvals={approvals} truncated={truncated} />);
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
    try {
      await decideApproval(sql, audit, {
        id,
        decision,
        reason,
        decidedBy: `console:${approver.label}`,
        decidedByTokenId: approver.tokenId,
        expectedHash: field(form, 'hash'),
      });
    } catch (err) {
      if (!(err instanceof ApprovalDecisionError)) throw err;
      const status = {
        unknown: 404,
        invalid: 400,
        reason_required: 400,
        decided: 409,
        expired: 409,
        changed: 409,
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

  app.post('/logout', async (c) => {
    const sid = getCookie(c, SESSION);
    if (sid) await deleteSession(sql, sid);
    deleteCookie(c, SESSION, { path: '/', secure });
    return c.redirect('/login', 303);
  });

  app.notFound((c) => c.text('Not found.', 404));
  app.onError((err, c) => {
    logger.error({ err }, 'console request failed');
    return c.text('Something went wrong; the details are in the console log.', 500);
  });

  return { app, close: () => verifier.close() };
}
