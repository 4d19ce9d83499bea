/** @jsxImportSource hono/jsx */
import type { Outcome } from '@bulkhead/audit';
import type { Hono } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { foreignPost } from '../../middleware/own-origin.ts';
import { createSession, findSession } from '../../sessions.ts';
import { sourceAddress } from '../../source.ts';
import { auditSignIn, throttled, type SignInRefusal } from './audit.tsx';
import { mintSignInForm, redeemSignInForm, SIGN_IN_FORM_SECONDS } from './forms.ts';
import { LoginPage } from './page.tsx';

/** Where to go after signing in: only back to an OAuth authorization request of this console. */
export function nextPath(value: string | undefined): string | undefined {
  return value && value.startsWith('/oauth/authorize?') ? value : undefined;
}

/** Every value the browser sent for cookie `name`: a cookie planted from another port may sit beside ours. */
export function cookieValues(header: string | undefined, name: string): string[] {
  return (header ?? '')
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.startsWith(`${name}=`))
    .map((p) => p.slice(name.length + 1));
}

/** The sign-in form with a freshly minted single-use nonce, its binding in the sign-in cookie. */
async function loginForm(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  error?: string,
  status = 200,
  next?: string,
) {
  const form = await mintSignInForm(ctx.sql, sourceAddress(c, ctx.proxyHops));
  setCookie(c, ctx.cookies.login, form.binding, { ...ctx.cookies.attributes, maxAge: SIGN_IN_FORM_SECONDS });
  return page(
    c,
    <LoginPage
      csrf={form.nonce}
      error={error}
      next={next}
      oidc={ctx.oidc ? new URL(ctx.oidc.settings.issuer).host : undefined}
      tokenSignIn={ctx.tokenSignIn}
    />,
    status,
  );
}

/** `GET /login`: the sign-in form, or straight on for someone already signed in. */
async function showSignIn(c: ConsoleRequest, ctx: ConsoleContext) {
  const next = nextPath(c.req.query('next'));
  const sid = getCookie(c, ctx.cookies.session);
  if (sid && (await findSession(ctx.sql, sid, ctx.tokenSignIn))) return c.redirect(next ?? '/', 303);
  return loginForm(c, ctx, undefined, 200, next);
}

/**
 * `POST /login`. A sign-in is counted against its source before anything is checked, and given back
 * if it succeeds. Every refusal — from another site, with a form the console did not mint, with a
 * token that does not open the console — is audited; past the limit, attempts get 429 and one audit
 * event per window.
 */
async function signIn(c: ConsoleRequest, ctx: ConsoleContext) {
  const { sql, logger, throttle, cookies } = ctx;
  const { failures: limit, windowSeconds } = throttle.policy;
  const started = performance.now();
  const source = sourceAddress(c, ctx.proxyHops);
  const slot = await throttle.reserve(source);
  if (!slot.ok) {
    if (slot.firstInWindow)
      await auditSignIn(c, ctx, started, 'rate_limited', {
        reason: 'too_many_failures',
        retry_after_s: slot.retryAfterSeconds,
        limit: `${limit} per ${windowSeconds} s`,
      });
    logger.warn({ source, retryAfter: slot.retryAfterSeconds }, 'console sign-in throttled');
    return throttled(c, ctx, slot.retryAfterSeconds);
  }
  const refused = async (
    reason: SignInRefusal,
    outcome: Outcome,
    token: { tokenId?: string | undefined; label?: string | undefined } = {},
  ) => {
    await auditSignIn(c, ctx, started, outcome, { reason }, token);
    logger.info({ source, reason, presentedTokenId: token.tokenId }, 'console sign-in refused');
  };
  const foreign = foreignPost(c, ctx.publicUrl);
  if (foreign) {
    await refused(foreign, 'forbidden');
    return c.text('Cross-origin form refused.', 403);
  }
  const form = await c.req.parseBody();
  const next = nextPath(field(form, 'next'));
  if (!ctx.tokenSignIn) {
    await refused('token_sign_in_off', 'forbidden');
    return loginForm(
      c,
      ctx,
      'Approver tokens do not open this console: sign in with your company account.',
      403,
      next,
    );
  }

  if (
    !(await redeemSignInForm(
      sql,
      field(form, '_csrf') ?? '',
      cookieValues(c.req.header('cookie'), cookies.login),
    ))
  ) {
    await refused('form_not_valid', 'bad_request');
    return loginForm(c, ctx, 'The sign-in form had expired. Please enter your token again.', 400, next);
  }
  const presented = field(form, 'token')?.trim() ?? '';
  const verdict = await ctx.verifier.verify(presented);
  if (!verdict.ok) {
    await refused(verdict.reason, 'unauthorized', verdict);
    return loginForm(
      c,
      ctx,
      'This token does not open the console: it is unknown, expired, revoked, or not an approver token.',
      401,
      next,
    );
  }
  await throttle.release(source, slot.slot);
  const hours = ctx.sessionHours;
  const sid = await createSession(sql, presented, hours);
  await auditSignIn(c, ctx, started, 'ok', { session_hours: hours }, verdict.access);
  deleteCookie(c, cookies.login, { path: '/', secure: cookies.attributes.secure });
  setCookie(c, cookies.session, sid, { ...cookies.attributes, maxAge: Math.round(hours * 3600) });
  logger.info({ tokenId: verdict.access.tokenId, label: verdict.access.label }, 'approver signed in');
  return c.redirect(next ?? '/', 303);
}

/** The sign-in form and its answer; they need no approver. */
export function mountSignIn(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.get('/login', (c) => showSignIn(c, ctx));
  app.post('/login', (c) => signIn(c, ctx));
}
