import type { MiddlewareHandler } from 'hono';
import { STYLE_HASH } from '../layout/styles.ts';

/** The headers every answer carries: a strict CSP, no framing, no sniffing, no caching. */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  // The consent page sets its own, which lets its form answer go back to the client.
  if (!c.res.headers.has('Content-Security-Policy'))
    c.header(
      'Content-Security-Policy',
      `default-src 'none'; style-src ${STYLE_HASH}; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
  c.header('X-Frame-Options', 'DENY');
  c.header('X-Content-Type-Options', 'nosniff');
  // Not no-referrer: with it browsers send `Origin: null` on form posts, and the origin check needs it.
  c.header('Referrer-Policy', 'same-origin');
  c.header('Cache-Control', 'no-store');
};
