/** @jsxImportSource hono/jsx */
import type { MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie } from 'hono/cookie';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../context.ts';
import { field } from '../form-field.ts';
import { page } from '../layout/layout.tsx';
import { MessagePage } from '../layout/message-page.tsx';
import { auditSignIn, throttled, type SignInRefusal } from '../pages/sign-in/audit.tsx';
import { approverOf, findSession, sameSecret, type Approver } from '../sessions.ts';
import { sourceAddress } from '../source.ts';

/**
 * The approver a bearer token names, or the answer that refuses it. A bearer token is a sign-in
 * too: counted, throttled and audited like the form.
 */
async function bearerApprover(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  authorization: string,
): Promise<{ approver: Approver } | { response: Response | Promise<Response> }> {
  const { failures: limit, windowSeconds } = ctx.throttle.policy;
  const started = performance.now();
  const source = sourceAddress(c, ctx.proxyHops);
  const slot = await ctx.throttle.reserve(source);
  if (!slot.ok) {
    if (slot.firstInWindow)
      await auditSignIn(c, ctx, started, 'rate_limited', {
        reason: 'too_many_failures',
        via: 'bearer',
        retry_after_s: slot.retryAfterSeconds,
        limit: `${limit} per ${windowSeconds} s`,
      });
    return { response: throttled(c, ctx, slot.retryAfterSeconds) };
  }
  const bearer = authorization.match(/^Bearer ([^\s]+)$/i)?.[1];
  const verdict = bearer && ctx.tokenSignIn ? await ctx.verifier.verify(bearer) : undefined;
  if (!verdict?.ok) {
    const reason: SignInRefusal =
      verdict?.reason ?? (ctx.tokenSignIn ? 'malformed_header' : 'token_sign_in_off');
    await auditSignIn(c, ctx, started, 'unauthorized', { reason, via: 'bearer' }, verdict ?? {});
    ctx.logger.info({ source, reason }, 'console request refused');
    c.header('WWW-Authenticate', 'Bearer realm="console", error="invalid_token"');
    return {
      response: page(
        c,
        <MessagePage
          title="Not an approver token"
          message="The console opens only with an approver token; MCP tokens are never valid here."
        />,
        401,
      ),
    };
  }
  await ctx.throttle.release(source, slot.slot);
  return {
    approver: approverOf({ ...verdict.access, owner: verdict.access.owner ?? null }, null, bearer!),
  };
}

/**
 * Lets through only a request with an approver, set as `approver`. A request with an `Authorization`
 * header is judged by that token alone: anything but a valid approver token is 401. Otherwise the
 * session cookie must name a live session, and a POST must carry that session's CSRF token.
 */
export function requireApprover(ctx: ConsoleContext): MiddlewareHandler<ConsoleEnv> {
  const { cookies } = ctx;
  return async (c, next) => {
    const authorization = c.req.header('authorization');
    if (authorization !== undefined) {
      const bearer = await bearerApprover(c, ctx, authorization);
      if ('response' in bearer) return bearer.response;
      c.set('approver', bearer.approver);
      c.get('audit').identify(bearer.approver);
      return next();
    }
    const sid = getCookie(c, cookies.session);
    const approver = sid ? await findSession(ctx.sql, sid, ctx.tokenSignIn) : undefined;
    if (!approver) {
      if (sid) deleteCookie(c, cookies.session, { path: '/', secure: cookies.attributes.secure });
      if (c.req.method === 'GET' || c.req.method === 'HEAD') return c.redirect('/login', 303);
      return page(
        c,
        <MessagePage title="Signed out" message="Your session has ended; sign in again." />,
        401,
      );
    }
    c.set('approver', approver);
    // The request's later events (an operator's action) name the approver's token.
    c.get('audit').identify(approver);
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
  };
}
