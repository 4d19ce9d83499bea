import type { MiddlewareHandler } from 'hono';
import type { RateLimiter } from '../../rate-limit.ts';
import { Refusal } from '../refusal.ts';
import type { McpEnv } from '../state.ts';

function refusal(retryAfterSeconds: number, summary: Record<string, unknown>): Refusal {
  return new Refusal(
    429,
    'rate_limited',
    {
      error: 'rate_limited',
      error_description: `Too many requests for this token; retry after ${retryAfterSeconds} s.`,
    },
    { headers: { 'Retry-After': String(retryAfterSeconds) }, summary },
  );
}

/**
 * The per-token request limit; it answers from memory, never with a database write per request.
 * Runs before the body is read, so a token over its limit costs one unit and no parsing.
 */
export function rateLimit(limiter: RateLimiter): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const verdict = limiter.take(c.get('access')!.tokenId);
    if (!verdict.ok) throw refusal(verdict.retryAfterSeconds, { reason: 'rate' });
    await next();
  };
}

/**
 * The rest of a 2025-03-26 batch's units, once its body is parsed: every message counts against the
 * limit as if it came alone (the request itself took one unit in {@link rateLimit}), so a batch of
 * 20 is 20 requests, not one.
 */
export function batchRateLimit(limiter: RateLimiter): MiddlewareHandler<McpEnv> {
  return async (c, next) => {
    const more = c.get('messages').length - 1;
    if (more > 0) {
      const verdict = limiter.take(c.get('access')!.tokenId, more);
      if (!verdict.ok) throw refusal(verdict.retryAfterSeconds, { reason: 'rate', batch: more + 1 });
    }
    await next();
  };
}
