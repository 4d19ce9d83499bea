import { isConnectionError, type Sql } from '@bulkhead/db';
import type { TransactionSql } from '../database/guarded-sql.ts';
import type { CallRecord } from './record-call.ts';
import { NoConnectionInTime, waitAtMost } from './time-limit.ts';

/** How often a transaction whose BEGIN lost its connection is begun again, before `fn` ran. */
const BEGIN_ATTEMPTS = 3;
/** A BEGIN that took longer than this to fail met a database that is away, not a stale connection. */
const BEGIN_QUICK_FAILURE_MS = 500;

/**
 * `sql.begin(fn)`, waiting for its connection no longer than the call's time limit (or until the
 * client withdraws the call): a transaction given up on before it began rolls back at once, before
 * `fn` runs. Once `fn` runs, its own time limit holds.
 *
 * A BEGIN that lost its connection (a pooled connection whose backend was terminated, before the pool
 * saw its socket close) is begun again on another, within the deadline: `fn` had not run, so nothing
 * was done twice. A connection lost once `fn` runs is the call's error.
 */
export async function transaction<T>(
  sql: Sql,
  limit: { timeoutMs: number; deadline: number },
  signal: AbortSignal | undefined,
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const began = { value: false };
    const started = performance.now();
    try {
      return await transactionOnce(sql, limit, signal, began, fn);
    } catch (err) {
      // Only a BEGIN that failed at once (a stale pooled connection) is begun again; one that waited for
      // its connection met a database that is away, and would wait as long again.
      const again =
        !began.value &&
        performance.now() - started < BEGIN_QUICK_FAILURE_MS &&
        attempt < BEGIN_ATTEMPTS &&
        isConnectionError(err) &&
        !signal?.aborted &&
        performance.now() + 100 < limit.deadline;
      if (!again) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
    }
  }
}

async function transactionOnce<T>(
  sql: Sql,
  limit: { timeoutMs: number; deadline: number },
  signal: AbortSignal | undefined,
  began: { value: boolean },
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  let abandoned = false;
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const done = sql.begin((tx: TransactionSql) => {
    if (abandoned) throw new NoConnectionInTime(limit.timeoutMs);
    began.value = true;
    entered();
    return fn(tx);
  }) as Promise<T>;
  done.catch(() => {});
  try {
    await waitAtMost(Promise.race([inside, done]), limit.deadline, limit.timeoutMs, signal);
  } catch (err) {
    abandoned = true;
    throw err;
  }
  return done;
}

/** A write call's COMMIT that outlived the call's time limit: the change may have been made, or not yet. */
export class CommitUnconfirmed extends Error {
  override readonly name = 'CommitUnconfirmed';
}

/**
 * The transaction's result, waiting for its COMMIT until the call's deadline (or a moment after a call
 * that used it up), however long the database takes to confirm it (a synchronous standby away in a
 * failover). Past that the call answers that the change may have been made, and the COMMIT goes on
 * alone: its event stands if it commits, and a refusal is recorded if it fails.
 */
export async function committedInTime<T>(
  work: Promise<T>,
  commitBegun: Promise<void>,
  rec: CallRecord,
): Promise<T> {
  work.catch(() => {});
  const first = await Promise.race([work, commitBegun.then(() => COMMITTING)]);
  if (first !== COMMITTING) return first as T;
  const grace = Math.min(1_000, rec.limit.timeoutMs / 2);
  try {
    return await waitAtMost(
      work,
      Math.max(rec.limit.deadline, performance.now() + grace),
      rec.limit.timeoutMs,
    );
  } catch (err) {
    if (!(err instanceof NoConnectionInTime)) throw err;
    rec.logger.warn('the COMMIT was not confirmed within the time limit; it goes on alone');
    work.catch((e: unknown) => {
      // No event was committed: the call's one event is this refusal.
      const fate = isConnectionError(e)
        ? 'lost its connection, so it may or may not have been made'
        : 'failed, so it was not made';
      void rec.refuse(
        'unavailable',
        `The call was answered before its COMMIT ended; the COMMIT then ${fate}.`,
      );
    });
    throw new CommitUnconfirmed();
  }
}
const COMMITTING = Symbol('committing');
