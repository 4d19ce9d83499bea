import type { RefusalLog } from '@bulkhead/core';
import type { Context, MiddlewareHandler } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { sourceAddress } from '../source.ts';
import { auditOf } from './request-audit.ts';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const OAUTH_API = /^\/oauth\/(token|register|revoke)$/;

/** The audit method of a form a POST was refused for: the method its own event would have. */
function formMethod(path: string): string {
  if (path === '/oauth/authorize') return 'oauth/authorize';
  if (/^\/approvals\/[^/]+\/decide$/.test(path)) return 'approvals/decide';
  if (path === '/logout') return 'console/logout';
  return 'console/form';
}

function hostname(host: string): string {
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1);
  return host.split(':')[0]!.toLowerCase();
}

/**
 * Why a POST did not come from one of the console's own pages, if it did not. `Origin` names the
 * page's origin, port included; `Sec-Fetch-Site` tells a page on another port of this host
 * (`same-site`, which SameSite cookies let through) from the console's own (`same-origin`).
 */
export function foreignPost(c: Context, publicUrl: URL): 'cross_origin' | 'cross_site' | undefined {
  const origin = c.req.header('origin');
  if (origin !== undefined && origin !== new URL(c.req.url).origin && origin !== publicUrl.origin)
    return 'cross_origin';
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return 'cross_site';
  return undefined;
}

/**
 * Refuses a request for a `Host` the console does not answer to (loopback names, the public URL's
 * host and `allowedHosts`), and a form posted from another origin; the refused forms are audited.
 */
export function ownOrigin(
  ctx: ConsoleContext,
  allowedHosts: string[],
  refusals: RefusalLog,
): MiddlewareHandler<ConsoleEnv> {
  const { logger, publicUrl, proxyHops } = ctx;
  const hosts = new Set([...LOOPBACK, publicUrl.hostname, ...allowedHosts]);
  return async (c, next) => {
    const host = c.req.header('host');
    if (!host || !hosts.has(hostname(host))) return c.text('Host not allowed.', 403);
    // Forms are only accepted from the console's own pages (SameSite=Strict and CSRF tokens stand behind
    // this). The sign-in form checks the same itself, so that a refused sign-in is counted and audited.
    // The OAuth token, registration and revocation endpoints are APIs for clients, browser-based ones too.
    const foreign =
      c.req.method === 'POST' && c.req.path !== '/login' && !OAUTH_API.test(c.req.path)
        ? foreignPost(c, publicUrl)
        : undefined;
    if (foreign) {
      const source = sourceAddress(c, proxyHops);
      const id = /^\/approvals\/([^/]{1,100})\/decide$/.exec(c.req.path)?.[1];
      await refusals
        .record(
          auditOf(c).event({
            method: formMethod(c.req.path),
            outcome: 'forbidden',
            durationMs: 0,
            arguments: { source, ...(id ? { approval_id: id } : {}) },
            resultSummary: {
              reason: foreign,
              path: c.req.path.slice(0, 200),
              origin: c.req.header('origin')?.slice(0, 200) ?? null,
              sec_fetch_site: c.req.header('sec-fetch-site')?.slice(0, 50) ?? null,
            },
          }),
          { authenticated: false, source },
        )
        .catch((err: unknown) =>
          logger.error({ err }, 'audit event for a refused form could not be written'),
        );
      logger.info({ source, reason: foreign, path: c.req.path }, 'cross-origin form refused');
      return c.text('Cross-origin form refused.', 403);
    }
    return next();
  };
}
