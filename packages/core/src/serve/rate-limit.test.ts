import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRateLimiter } from './rate-limit.ts';

const MINUTE = 60_000;
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** Takes `n` requests of `token` and returns how many were let through. */
function take(limiter: ReturnType<typeof createRateLimiter>, token: string, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (limiter.take(token).ok) ok++;
  return ok;
}

it('lets no more than the limit through around a minute boundary (a burst at :59 and another at :01)', async () => {
  let t = Math.floor(Date.now() / MINUTE) * MINUTE + MINUTE - 1000; // one second before a minute ends
  const limiter = createRateLimiter((await db.as('customer')).sql, 60, {
    now: () => t,
    syncIntervalMs: 3_600_000,
  });
  try {
    expect(take(limiter, 'tok_boundary', 100)).toBe(60);
    const refused = limiter.take('tok_boundary');
    expect(refused).toEqual({ ok: false, retryAfterSeconds: 1 });
    // Two seconds later, in the next minute: the previous minute still weighs 59/60 of its 60.
    t += 2000;
    expect(take(limiter, 'tok_boundary', 100)).toBe(1);
    // Half a minute on, half of the previous minute has slid out: 30 more, less the one already let through.
    t += 29_000;
    expect(take(limiter, 'tok_boundary', 100)).toBe(29);
    // A fixed window would have let 120 through in two seconds; this let 61 through in 32.
    // Two minutes later the token starts afresh.
    t += 2 * MINUTE;
    expect(take(limiter, 'tok_boundary', 100)).toBe(60);
    // Another token has a window of its own.
    expect(take(limiter, 'tok_other', 10)).toBe(10);
  } finally {
    await limiter.close();
  }
});

it('two replicas overshoot together by at most what they admit between two exchanges, then hold the limit', async () => {
  const t = Math.floor(Date.now() / MINUTE) * MINUTE + 1000;
  const { sql } = await db.as('customer');
  // Exchanges happen when the test says (sync), not on a timer.
  const a = createRateLimiter(sql, 100, { now: () => t, syncIntervalMs: 3_600_000 });
  const b = createRateLimiter(sql, 100, { now: () => t, syncIntervalMs: 3_600_000 });
  try {
    expect(take(a, 'tok_shared', 80)).toBe(80);
    await a.sync();
    // B learns A's 80 at its next exchange (it must know the token first: its first request counts it).
    expect(take(b, 'tok_shared', 1)).toBe(1);
    await b.sync();
    await a.sync();
    // Both now know 81 of 100 were used: each admits the remaining 19 before the next exchange.
    expect(take(a, 'tok_shared', 50)).toBe(19);
    expect(take(b, 'tok_shared', 50)).toBe(19);
    // Overshoot: 119 against a limit of 100, i.e. (replicas − 1) × the allowance left at the last exchange.
    await a.sync();
    await b.sync();
    await a.sync();
    expect(take(a, 'tok_shared', 10)).toBe(0);
    expect(take(b, 'tok_shared', 10)).toBe(0);
    const [row] = await db.sql<{ count: number }[]>`
      select sum(count)::int as count from bulkhead_rate_limits where token_id = 'tok_shared'`;
    expect(row!.count).toBe(119);
  } finally {
    await a.close();
    await b.close();
  }
});
