import type { MiddlewareHandler } from 'hono';
import type { RateLimiter } from '../../rate-limit.ts';
import { Refusal } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

/** The per-token request limit; it answers from memory, never with a database write per request. */
export function rateLimit(limiter: RateLimiter): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const access = c.get('access')!;
    const verdict = limiter.take(access.tokenId);
    if (!verdict.ok)
      throw new Refusal(
        429,
        'rate_limited',
        {
          error: 'rate_limited',
          error_description: `Too many requests for this token; retry after ${verdict.retryAfterSeconds} s.`,
        },
        { headers: { 'Retry-After': String(verdict.retryAfterSeconds) }, summary: { reason: 'rate' } },
      );
    await next();
  };
}
