/** @jsxImportSource hono/jsx */
import { createHash } from 'node:crypto';
import type { Outcome } from '@bulkhead/audit';
import type { Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { Layout, page } from '../../layout/layout.tsx';
import { MessagePage } from '../../layout/message-page.tsx';
import { OidcRefusal } from '../../oidc/client.ts';
import { randomToken } from '../../sessions.ts';
import { sourceAddress } from '../../source.ts';
import { auditSignIn, throttled, type SignInRefusal } from './audit.tsx';
import { personRefusal, type SignedInPerson } from './person.ts';
import { cookieValues, nextPath } from './route.tsx';

const FLOW_SECONDS = 600;

/** Where the IdP sends the browser back: under the console's public address, as registered at the IdP. */
export function redirectUri(ctx: ConsoleContext): string {
  return `${ctx.publicUrl.origin}${ctx.publicUrl.pathname.replace(/\/$/, '')}/login/oidc/callback`;
}

/** `GET /login/oidc`: starts a sign-in at the IdP (state, nonce and PKCE verifier kept by the database). */
async function begin(c: ConsoleRequest, ctx: ConsoleContext, oidc: NonNullable<ConsoleContext['oidc']>) {
  const started = performance.now();
  const next = nextPath(c.req.query('next'));
  const binding = randomToken();
  try {
    const flow = await oidc.begin(redirectUri(ctx));
    const { issuer, clientId } = oidc.settings;
    await ctx.sql`select bulkhead_oidc_begin(${flow.state}, ${binding}, ${issuer}, ${clientId}, ${flow.nonce},
      ${flow.verifier}, ${next ?? null}, ${sourceAddress(c, ctx.proxyHops)})`;
    setCookie(c, ctx.cookies.oidc, binding, {
      ...ctx.cookies.attributes,
      sameSite: 'Lax',
      maxAge: FLOW_SECONDS,
    });
    return c.redirect(flow.url.href, 302);
  } catch (err) {
    if ((err as { code?: string }).code === '54000') {
      await auditSignIn(c, ctx, started, 'rate_limited', { reason: 'too_many_in_flight', via: 'oidc' });
      return page(
        c,
        <MessagePage
          title="Too many sign-ins"
          message="Too many sign-ins were started from your address in the last ten minutes. Finish one, or try again later."
        />,
        429,
      );
    }
    if (!(err instanceof OidcRefusal)) throw err;
    await auditSignIn(c, ctx, started, 'unavailable', { reason: err.reason, via: 'oidc' });
    ctx.logger.warn({ err }, 'identity provider unreachable');
    return page(c, <MessagePage title="Sign-in unavailable" message={`${err.message}.`} />, 502);
  }
}

/** Why openid-client refused the IdP's answer, as the audit event names it. */
function refusalReason(err: OidcRefusal): SignInRefusal {
  if (err.reason !== 'response_invalid') return err.reason;
  if (/"iss"|issuer/i.test(err.message)) return 'issuer_mismatch';
  if (/nonce/i.test(err.message)) return 'nonce_mismatch';
  if (/invalid_grant/i.test(err.message)) return 'code_rejected';
  return 'response_invalid';
}

/** After signing in: a page that moves on by itself (a new navigation, so the SameSite=Strict cookie goes along). */
function Continue({ to }: { to: string }) {
  return (
    <Layout title="Signed in">
      <meta http-equiv="refresh" content={`0;url=${to}`} />
      <h1>Signed in</h1>
      <p>
        <a href={to}>Continue</a>
      </p>
    </Layout>
  );
}

/**
 * `GET /login/oidc/callback`: the IdP's answer. The database hands the sign-in back once, to the browser
 * that started it; openid-client checks `iss` (RFC 9207), state, the code exchange with the PKCE verifier
 * and the ID token; the database then checks the ID token's nonce, issuer, audience and expiry itself,
 * records the person and opens a session only for someone whose groups carry a right. Every refusal is
 * audited with the person, when one is known.
 */
async function callback(c: ConsoleRequest, ctx: ConsoleContext, oidc: NonNullable<ConsoleContext['oidc']>) {
  const { sql, throttle, cookies } = ctx;
  const started = performance.now();
  const source = sourceAddress(c, ctx.proxyHops);
  const slot = await throttle.reserve(source);
  if (!slot.ok) {
    if (slot.firstInWindow)
      await auditSignIn(c, ctx, started, 'rate_limited', { reason: 'too_many_failures', via: 'oidc' });
    return throttled(c, ctx, slot.retryAfterSeconds);
  }
  const refuse = async (
    reason: SignInRefusal,
    outcome: Outcome,
    status: 400 | 401 | 403,
    message: string,
    person?: SignedInPerson,
    detail?: string,
  ) => {
    await auditSignIn(
      c,
      ctx,
      started,
      outcome,
      {
        reason,
        via: 'oidc',
        ...(detail ? { detail } : {}),
        ...(person ? { person: personSummary(person) } : {}),
      },
      person ? { tokenId: person.tokenId ?? undefined, label: person.label } : {},
    );
    ctx.logger.info({ source, reason }, 'console sign-in refused');
    return page(c, <MessagePage title="Not signed in" message={message} />, status);
  };
  const state = c.req.query('state') ?? '';
  const [flow] = await sql<{ nonce: string; verifier: string; next: string | null }[]>`
    select nonce, verifier, next from bulkhead_oidc_resume(${state},
      ${cookieValues(c.req.header('cookie'), cookies.oidc)})`;
  deleteCookie(c, cookies.oidc, { path: '/', secure: cookies.attributes.secure });
  if (!flow)
    return refuse(
      'state_not_valid',
      'bad_request',
      400,
      'This sign-in was not started in this browser, has expired or was already used. Sign in again.',
    );
  const query = new URL(c.req.url).search;
  let idToken: string;
  try {
    ({ idToken } = await oidc.finish(new URL(`${redirectUri(ctx)}${query}`), { state, ...flow }));
  } catch (err) {
    if (!(err instanceof OidcRefusal)) throw err;
    return refuse(
      refusalReason(err),
      'unauthorized',
      401,
      `The identity provider's answer was refused: ${err.message}. Sign in again.`,
      undefined,
      err.message,
    );
  }
  const sid = randomToken();
  let person: SignedInPerson | undefined;
  try {
    [person] = await sql<SignedInPerson[]>`
      select outcome, person_id as "personId", token_id as "tokenId", label, issuer, subject, name, email, groups,
        scopes
      from bulkhead_console_oidc_sign_in(${state}, ${idToken}, ${oidc.settings.groupsClaim}, ${sid},
        ${randomToken()}, ${ctx.sessionHours})`;
  } catch (err) {
    if ((err as { code?: string }).code !== '42501') throw err;
    const message = (err as Error).message;
    return refuse('id_token_refused', 'unauthorized', 401, `${message}. Sign in again.`, undefined, message);
  }
  if (!person) throw new Error('bulkhead_console_oidc_sign_in answered no row');
  if (person.outcome !== 'ok')
    return refuse(person.outcome, 'forbidden', 403, personRefusal(person, oidc.settings.groupsClaim), person);
  await throttle.release(source, slot.slot);
  await auditSignIn(
    c,
    ctx,
    started,
    'ok',
    {
      via: 'oidc',
      session_hours: ctx.sessionHours,
      person: personSummary(person),
      rights: person.scopes,
      id_token_sha256: createHash('sha256').update(idToken).digest('hex'),
    },
    { tokenId: person.tokenId ?? undefined, label: person.label },
  );
  setCookie(c, cookies.session, sid, { ...cookies.attributes, maxAge: Math.round(ctx.sessionHours * 3600) });
  ctx.logger.info({ personId: person.personId, label: person.label }, 'person signed in');
  return page(c, <Continue to={nextPath(flow.next ?? undefined) ?? '/'} />);
}

/** The person as a sign-in's audit event names them. */
function personSummary(p: SignedInPerson) {
  return { id: p.personId, iss: p.issuer, sub: p.subject, name: p.name, email: p.email, groups: p.groups };
}

/** Sign-in at the company's identity provider, when one is configured. */
export function mountOidcSignIn(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  const oidc = ctx.oidc;
  if (!oidc) return;
  app.get('/login/oidc', (c) => begin(c, ctx, oidc));
  app.get('/login/oidc/callback', (c) => callback(c, ctx, oidc));
}
