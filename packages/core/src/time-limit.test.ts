import { expect, it } from 'vitest';
import { Cancelled, TimeLimitExceeded, withTimeLimit } from './time-limit.ts';

it('returns the value of work that finishes in time', async () => {
  expect(await withTimeLimit(1000, async () => 42)).toBe(42);
});

it('rejects at the deadline even when the work ignores its signal, and aborts the signal', async () => {
  let seen: AbortSignal | undefined;
  const started = Date.now();
  await expect(
    withTimeLimit(100, (signal) => {
      seen = signal;
      return new Promise((_, reject) => setTimeout(() => reject(new Error('late failure')), 300));
    }),
  ).rejects.toBeInstanceOf(TimeLimitExceeded);
  expect(Date.now() - started).toBeLessThan(250);
  expect(seen!.aborted).toBe(true);
  // The late rejection at 300 ms must not surface as an unhandled rejection (vitest fails the run if it does).
  await new Promise((r) => setTimeout(r, 300));
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
