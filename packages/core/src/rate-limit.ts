import type { Sql } from '@bulkhead/db';

/** Counts requests per token per minute in Postgres, so the limit holds across replicas. */
export interface RateLimiter {
  /** True when the request may proceed. */
  take(tokenId: string): Promise<{ ok: boolean; retryAfterSeconds: number }>;
}

export function createRateLimiter(sql: Sql, perMinute: number): RateLimiter {
  let calls = 0;
  return {
    async take(tokenId) {
      if (perMinute <= 0) return { ok: true, retryAfterSeconds: 0 };
      if (++calls % 1000 === 0) {
        sql`delete from bulkhead_rate_limits where window_start < now() - interval '10 minutes'`.catch(
          () => {},
        );
      }
      const [row] = await sql<{ count: number; retry: number }[]>`
        insert into bulkhead_rate_limits (token_id, window_start, count)
        values (${tokenId}, date_trunc('minute', now()), 1)
        on conflict (token_id, window_start) do update set count = bulkhead_rate_limits.count + 1
        returning count, ceil(extract(epoch from date_trunc('minute', now()) + interval '1 minute' - now()))::int as retry`;
      return { ok: row!.count <= perMinute, retryAfterSeconds: row!.retry };
    },
  };
}
