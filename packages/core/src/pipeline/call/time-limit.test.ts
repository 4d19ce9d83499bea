import { expect, it, vi } from 'vitest';
import { Cancelled, TimeLimitExceeded, withTimeLimit } from './time-limit.ts';

it('returns the value of work that finishes in time', async () => {
  expect(await withTimeLimit(1000, async () => 42)).toBe(42);
});

it('rejects at the deadline even when the work ignores its signal, and aborts the signal', async () => {
  // Time is the subject: the clock is faked, so the deadline is exact and no machine is too slow for it.
  vi.useFakeTimers();
  try {
    let seen: AbortSignal | undefined;
    let settled: unknown;
    const run = withTimeLimit(100, (signal) => {
      seen = signal;
      return new Promise((_, reject) => setTimeout(() => reject(new Error('late failure')), 300));
    }).then(
      () => (settled = 'resolved'),
      (err: unknown) => (settled = err),
    );
    await vi.advanceTimersByTimeAsync(99);
    expect(settled).toBeUndefined();
    expect(seen!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await run;
    expect(settled).toBeInstanceOf(TimeLimitExceeded);
    expect(seen!.aborted).toBe(true);
    expect(seen!.reason).toBeInstanceOf(TimeLimitExceeded);
    // The late rejection at 300 ms must not surface as an unhandled rejection (vitest fails the run if it does).
    await vi.advanceTimersByTimeAsync(200);
    expect(vi.getTimerCount()).toBe(0);
  } finally {
    vi.useRealTimers();
  }
});

it('passes an aborted parent on to the work and rejects as cancelled, even when the work ignores it', async () => {
  const parent = new AbortController();
  let seen: AbortSignal | undefined;
  const run = withTimeLimit(
    5000,
    (signal) => {
      seen = signal;
      return new Promise(() => {});
    },
    parent.signal,
  );
  parent.abort(new Error('client went away'));
  await expect(run).rejects.toBeInstanceOf(Cancelled);
  expect(seen!.aborted).toBe(true);
  expect(seen!.reason).toBeInstanceOf(Cancelled);
});

it('rejects at once when the parent was aborted before the work started', async () => {
  const parent = new AbortController();
  parent.abort();
  let ran = false;
  await expect(
    withTimeLimit(
      5000,
      async () => {
        ran = true;
        return 1;
      },
      parent.signal,
    ),
  ).rejects.toBeInstanceOf(Cancelled);
  expect(ran).toBe(false);
});
