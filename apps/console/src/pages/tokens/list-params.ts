import { TOKEN_STATES, type TokenFilter } from './data.ts';
import type { Notice, ListScope } from './page.tsx';

const NOTICE_PARAMS = ['notice', 'id', 'tokens', 'grants'];
const ANYWHERE = 'http://console.invalid';

function text(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t && t.length <= 200 ? t : undefined;
}

/** The filter a list page's query asks for; the page's own person or server cannot be overridden. */
export function filterFrom(query: Record<string, string>, scope: ListScope): TokenFilter {
  const state = TOKEN_STATES.find((s) => s === query.state) ?? 'active';
  return {
    q: text(query.q),
    server: scope.kind === 'server' ? scope.server : text(query.server),
    person: scope.kind === 'person' ? scope.person : text(query.person),
    state,
  };
}

/** The notice a redirect after a revocation carries in the query, if any. */
export function noticeFrom(query: Record<string, string>): Notice | undefined {
  const { notice, id } = query;
  if (notice === 'person-revoked') {
    const tokens = Number(query.tokens);
    const grants = Number(query.grants);
    return Number.isSafeInteger(tokens) && Number.isSafeInteger(grants)
      ? { kind: notice, tokens, grants }
      : undefined;
  }
  if (
    id &&
    (notice === 'token-revoked' ||
      notice === 'token-unchanged' ||
      notice === 'grant-revoked' ||
      notice === 'grant-unchanged')
  )
    return { kind: notice, id };
  return undefined;
}

/** A page's path and query without a notice: where its forms come back to. */
export function pageAddress(url: string): string {
  const u = new URL(url);
  for (const p of NOTICE_PARAMS) u.searchParams.delete(p);
  return u.pathname + u.search;
}

/**
 * Where a revocation returns to, with its notice: the operator page the form names, never anything
 * else (another site, another part of the console); the tokens page when the form names none.
 */
export function backWith(back: string | undefined, notice: Record<string, string>): string {
  const u = new URL(back && /^\/operator\/[^/\\]/.test(back) ? back : '/operator/tokens', ANYWHERE);
  const target =
    u.origin === ANYWHERE && u.pathname.startsWith('/operator/') ? u : new URL('/operator/tokens', ANYWHERE);
  for (const p of NOTICE_PARAMS) target.searchParams.delete(p);
  for (const [k, v] of Object.entries(notice)) target.searchParams.set(k, v);
  return target.pathname + target.search;
}
