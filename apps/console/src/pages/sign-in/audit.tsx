/** @jsxImportSource hono/jsx */
import type { Outcome } from '@bulkhead/audit';
import type { Context } from 'hono';
import type { ConsoleContext } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { MessagePage } from '../../layout/message-page.tsx';
import { auditOf } from '../../middleware/request-audit.ts';
import { sourceAddress } from '../../source.ts';

/** Why a sign-in was refused, as the audit event and the log record it. */
export type SignInRefusal =
  | 'cross_origin'
  | 'cross_site'
  | 'form_not_valid'
  | 'malformed'
  | 'unknown'
  | 'wrong_server'
  | 'expired'
  | 'revoked'
  | 'malformed_header'
  | 'token_sign_in_off'
  | 'state_not_valid'
  | 'idp_error'
  | 'idp_unreachable'
  | 'issuer_mismatch'
  | 'nonce_mismatch'
  | 'code_rejected'
  | 'response_invalid'
  | 'id_token_refused'
  | 'no_rights'
  | 'deactivated';

/** Writes a sign-in's audit event (server `console`, method `console/sign-in`); never the token itself. */
export function auditSignIn(
  c: Context,
  ctx: ConsoleContext,
  started: number,
  outcome: Outcome,
  summary: Record<string, unknown>,
  token: { tokenId?: string | undefined; label?: string | undefined } = {},
) {
  return auditOf(c).append({
    method: 'console/sign-in',
    outcome,
    since: started,
    // The token presented, never the request's approver: a sign-in names what it was tried with.
    by: { tokenId: token.tokenId ?? null, label: token.label ?? null },
    arguments: { source: sourceAddress(c, ctx.proxyHops) },
    resultSummary: summary,
  });
}

/** 429 for a source over the limit: the page says when to come back, and so does `Retry-After`. */
export function throttled(c: Context, ctx: ConsoleContext, retryAfter: number) {
  const { failures: limit, windowSeconds } = ctx.throttle.policy;
  c.header('Retry-After', String(retryAfter));
  return page(
    c,
    <MessagePage
      title="Too many failed sign-ins"
      message={`More than ${limit} sign-ins from your address failed within ${windowSeconds} seconds. Try again in ${retryAfter} second${retryAfter === 1 ? '' : 's'}.`}
    />,
    429,
  );
}
