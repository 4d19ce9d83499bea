import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';

/** What a handler running an approved action may use for effects outside the database. */
export interface Outbox {
  /**
   * Records an effect (`email`, `webhook`, ...) in the action's transaction:
   * it is delivered after the commit, and never if the action is rolled back.
   * Returns the outbox id, which receivers get as the idempotency key.
   */
  enqueue(kind: string, payload: Record<string, unknown>): Promise<number>;
}

/** One row to deliver. */
export interface OutboxItem {
  id: number;
  server: string;
  approvalId: string | null;
  kind: string;
  payload: Record<string, unknown>;
  /** 1 on the first try. */
  attempt: number;
}

/** A delivery failed; `statusCode` is kept with the attempt when the receiver answered. */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  constructor(
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
  }
}

/** Delivers one item; resolves when the receiver has it, throws (best a {@link DeliveryError}) otherwise. */
export type Deliverer = (
  item: OutboxItem,
  ctx: { logger: Logger },
) => Promise<{ statusCode?: number } | void>;

/** Retry policy of the dispatcher. */
export interface RetryPolicy {
  /** Attempts before a row is given up as `failed` (default 8). */
  maxAttempts: number;
  /** Delay before the second attempt; doubled for each further one (default 5 s). */
  baseDelayMs: number;
  /** Longest delay between attempts (default 1 h). */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 8, baseDelayMs: 5_000, maxDelayMs: 3_600_000 };

/** The delay after the `attempt`-th failed attempt. */
export function backoff(policy: RetryPolicy, attempt: number): number {
  return Math.min(policy.baseDelayMs * 2 ** (attempt - 1), policy.maxDelayMs);
}

/** An {@link Outbox} writing with `sql` (inside an execution: its transaction). */
export function createOutbox(sql: Sql, server: string, approvalId: string | null): Outbox {
  return {
    async enqueue(kind, payload) {
      const [row] = await sql<{ id: string }[]>`
        insert into bulkhead_outbox (server, approval_id, kind, payload)
        values (${server}, ${approvalId}, ${kind}, ${sql.json(payload as never)})
        returning id`;
      return Number(row!.id);
    },
  };
}

/**
 * The demo's e-mail delivery: there is no mail server, so the e-mail is
 * written to the log and the row is marked delivered. Replace it with a real
 * sender (which should pass the outbox id as its idempotency key).
 */
export const logEmail: Deliverer = async (item, { logger }) => {
  const p = item.payload as { to?: unknown; subject?: unknown };
  logger.info(
    { outboxId: item.id, approvalId: item.approvalId, to: p.to, subject: p.subject },
    'e-mail delivered to the log (no mail server configured; nothing was sent)',
  );
};

/**
 * Delivers due rows of `server`, one at a time, each under a row lock taken
 * with SKIP LOCKED so that replicas share the work and never deliver the same
 * row at once. Every attempt is recorded; a failure is retried with
 * exponential backoff until `maxAttempts`. Returns how many rows it handled
 * and when the next retry falls due.
 */
export async function dispatchOutbox(
  sql: Sql,
  server: string,
  deliverers: Readonly<Record<string, Deliverer>>,
  logger: Logger,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<{ handled: number; nextDueAt: Date | null }> {
  let handled = 0;
  for (;;) {
    const done = await sql.begin(async (tx) => {
      const [row] = await tx<
        {
          id: string;
          approvalId: string | null;
          kind: string;
          payload: Record<string, unknown>;
          attempts: number;
        }[]
      >`
        select id, approval_id as "approvalId", kind, payload, attempts from bulkhead_outbox
        where server = ${server} and status = 'pending' and next_attempt_at <= now()
        order by next_attempt_at, id limit 1
        for update skip locked`;
      if (!row) return false;
      const item: OutboxItem = {
        id: Number(row.id),
        server,
        approvalId: row.approvalId,
        kind: row.kind,
        payload: row.payload,
        attempt: row.attempts + 1,
      };
      const log = logger.child({ outboxId: item.id, kind: item.kind });
      const started = performance.now();
      let statusCode: number | null = null;
      let error: string | null = null;
      const deliver = deliverers[item.kind];
      try {
        if (!deliver) throw new DeliveryError(`no deliverer for "${item.kind}" on ${server}`);
        statusCode = (await deliver(item, { logger: log }))?.statusCode ?? null;
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
        if (err instanceof DeliveryError) statusCode = err.statusCode ?? null;
      }
      const ms = Math.round(performance.now() - started);
      await tx`
        insert into bulkhead_outbox_attempts (outbox_id, attempt, ok, status_code, error, duration_ms)
        values (${item.id}, ${item.attempt}, ${error === null}, ${statusCode}, ${error}, ${ms})`;
      if (error === null) {
        await tx`
          update bulkhead_outbox set status = 'delivered', attempts = ${item.attempt}, delivered_at = now(),
            last_error = null where id = ${item.id}`;
      } else if (!deliver || item.attempt >= policy.maxAttempts) {
        log.error({ attempt: item.attempt, error }, 'outbox delivery failed for good');
        await tx`
          update bulkhead_outbox set status = 'failed', attempts = ${item.attempt}, last_error = ${error}
          where id = ${item.id}`;
      } else {
        const delay = backoff(policy, item.attempt);
        log.warn({ attempt: item.attempt, error, retryInMs: delay }, 'outbox delivery failed; will retry');
        await tx`
          update bulkhead_outbox set attempts = ${item.attempt}, last_error = ${error},
            next_attempt_at = now() + ${delay} * interval '1 millisecond'
          where id = ${item.id}`;
      }
      return true;
    });
    if (!done) break;
    handled++;
  }
  const [next] = await sql<{ at: Date | null }[]>`
    select min(next_attempt_at) as at from bulkhead_outbox where server = ${server} and status = 'pending'`;
  return { handled, nextDueAt: next?.at ?? null };
}
