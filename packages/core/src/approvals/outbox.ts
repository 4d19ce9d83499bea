import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { Outbox } from '../pipeline/tool-definition/define-tool.ts';
import { inSpan, linkTo, ROOT_CONTEXT, SpanKind } from '../pipeline/observability/tracing.ts';
import { assertEmailHeaders } from './email.ts';

/** One row to deliver. */
export interface OutboxItem {
  id: number;
  server: string;
  approvalId: string | null;
  kind: string;
  payload: Record<string, unknown>;
  /**
   * The row's idempotency key (`bulkhead-outbox-` and 32 random hex digits, made by the database): the
   * same on every attempt, so a receiver drops a repeat, and not guessable, so no text written before
   * the row existed can pass for what its delivery made.
   */
  key: string;
  /** 1 on the first try. */
  attempt: number;
}

/** How every outbox key begins; the rest is 32 random hex digits (see {@link OutboxItem.key}). */
export const OUTBOX_KEY_PREFIX = 'bulkhead-outbox-';

/**
 * Whether `text` carries an outbox key's prefix, or the `{key}` a delivery fills in: a text a model
 * wrote must not, so that a check before a retry finds only what the delivery itself wrote.
 */
export function mentionsOutboxKey(text: string): boolean {
  return /bulkhead-outbox-|\{key\}/i.test(text);
}

/**
 * A delivery failed; `statusCode` is kept with the attempt when the receiver answered. A `permanent`
 * failure (the receiver refused for good: an SMTP 5xx) fails the row at once instead of retrying it.
 */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  constructor(
    message: string,
    readonly statusCode?: number,
    readonly permanent = false,
  ) {
    super(message);
  }
}

/**
 * Delivers one item; resolves when the receiver has it, throws (best a {@link DeliveryError}) otherwise.
 * `signal` is aborted when the server stops: a deliverer that honours it lets the stop finish at once.
 */
export type Deliverer = (
  item: OutboxItem,
  ctx: { logger: Logger; signal: AbortSignal },
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
      if (kind === 'email') assertEmailHeaders(payload);
      const [row] = await sql<{ id: string }[]>`
        insert into bulkhead_outbox (server, approval_id, kind, payload)
        values (${server}, ${approvalId}, ${kind}, ${sql.json(payload as never)})
        returning id`;
      return Number(row!.id);
    },
  };
}

/** How {@link dispatchOutbox} paces itself. */
export interface DispatchOptions {
  /** Rows handled at most in one call (default 20); `more` says when due rows were left. */
  max?: number;
  /**
   * How long a claimed row stays invisible to other dispatchers while it is delivered (default 60 s).
   * Longer than any deliverer's own time limit; a process that dies mid-delivery gives it back when it lapses.
   */
  leaseMs?: number;
  /** Aborted when the server stops: an interrupted delivery is recorded and the row is due again at once. */
  signal?: AbortSignal;
}

interface ClaimedRow {
  id: string;
  key: string;
  approvalId: string | null;
  kind: string;
  payload: Record<string, unknown>;
  attempts: number;
  /** The `traceparent` of the call that filed the row's approval: its delivery links to it. */
  filedInTrace: string | null;
}

/**
 * Claims the oldest due row of `server` with a lease: one statement moves its
 * `next_attempt_at` past the lease and counts the attempt, and commits. So the
 * delivery itself runs outside any transaction, and neither holds a row lock
 * nor a connection while a receiver takes its time.
 */
async function claim(sql: Sql, server: string, leaseMs: number): Promise<ClaimedRow | undefined> {
  const [row] = await sql<ClaimedRow[]>`
    update bulkhead_outbox set attempts = attempts + 1,
      next_attempt_at = now() + ${leaseMs} * interval '1 millisecond'
    where id = (
      select id from bulkhead_outbox
      where server = ${server} and status = 'pending' and next_attempt_at <= now()
      order by next_attempt_at, id limit 1
      for update skip locked)
    returning id, idempotency_key as key, approval_id as "approvalId", kind, payload, attempts,
      (select a.filed_in_trace from bulkhead_approvals a where a.id = approval_id) as "filedInTrace"`;
  return row;
}

/**
 * One delivery as a span of its own trace (`deliver email`), linked to the call that filed its
 * approval: an operator follows a sent e-mail or webhook back to the request that asked for it.
 */
function traceDelivery<T>(item: OutboxItem, filedInTrace: string | null, fn: () => Promise<T>): Promise<T> {
  const attributes = {
    'bulkhead.outbox.kind': item.kind,
    'bulkhead.outbox.attempt': item.attempt,
    ...(item.approvalId ? { 'bulkhead.approval.id': item.approvalId } : {}),
  };
  return inSpan(
    `deliver ${item.kind}`,
    { kind: SpanKind.PRODUCER, attributes, links: linkTo(filedInTrace) },
    fn,
    ROOT_CONTEXT,
  );
}

/**
 * Delivers due rows of `server`, at most `max` per call. Each row is claimed
 * with a lease (see {@link claim}), delivered outside any transaction, then
 * marked delivered, retried later or failed — only if the lease is still this
 * dispatcher's (the attempt count is unchanged), so a dispatcher whose lease
 * lapsed cannot overwrite a newer attempt. Replicas share the work and never
 * deliver the same row at once unless a lease lapses mid-delivery; receivers
 * drop such a repeat by the idempotency key. Every attempt is recorded; a
 * failure is retried with exponential backoff until `maxAttempts`. Returns how
 * many rows it handled, whether due rows were left, and when the next falls due.
 */
export async function dispatchOutbox(
  sql: Sql,
  server: string,
  deliverers: Readonly<Record<string, Deliverer>>,
  logger: Logger,
  policy: RetryPolicy = DEFAULT_RETRY,
  options: DispatchOptions = {},
): Promise<{ handled: number; more: boolean; nextDueAt: Date | null }> {
  const max = options.max ?? 20;
  const leaseMs = options.leaseMs ?? 60_000;
  const signal = options.signal ?? new AbortController().signal;
  let handled = 0;
  let more = false;
  for (;;) {
    if (signal.aborted) break;
    if (handled >= max) {
      more = true;
      break;
    }
    const row = await claim(sql, server, leaseMs);
    if (!row) break;
    handled++;
    const item: OutboxItem = {
      id: Number(row.id),
      server,
      approvalId: row.approvalId,
      kind: row.kind,
      key: row.key,
      payload: row.payload,
      attempt: row.attempts,
    };
    const log = logger.child({ outboxId: item.id, kind: item.kind });
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    const deliver = deliverers[item.kind];
    try {
      if (!deliver) throw new DeliveryError(`no deliverer for "${item.kind}" on ${server}`);
      statusCode =
        (await traceDelivery(item, row.filedInTrace, () => deliver(item, { logger: log, signal })))
          ?.statusCode ?? null;
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      if (err instanceof DeliveryError) {
        statusCode = err.statusCode ?? null;
        permanent = err.permanent;
      }
    }
    const interrupted = error !== null && signal.aborted;
    if (interrupted) error = `interrupted: the server stopped during the delivery (${error})`;
    const ms = Math.round(performance.now() - started);
    const updated = await sql.begin(async (tx) => {
      const mine = tx`id = ${item.id} and status = 'pending' and attempts = ${item.attempt}`;
      await tx`
        insert into bulkhead_outbox_attempts (outbox_id, attempt, ok, status_code, error, duration_ms)
        values (${item.id}, ${item.attempt}, ${error === null}, ${statusCode}, ${error}, ${ms})`;
      if (error === null)
        return tx`
          update bulkhead_outbox set status = 'delivered', delivered_at = now(), last_error = null
          where ${mine}`;
      if (interrupted)
        return tx`update bulkhead_outbox set last_error = ${error}, next_attempt_at = now() where ${mine}`;
      if (!deliver || permanent || item.attempt >= policy.maxAttempts) {
        log.error({ attempt: item.attempt, error }, 'outbox delivery failed for good');
        return tx`update bulkhead_outbox set status = 'failed', last_error = ${error} where ${mine}`;
      }
      const delay = backoff(policy, item.attempt);
      log.warn({ attempt: item.attempt, error, retryInMs: delay }, 'outbox delivery failed; will retry');
      return tx`
        update bulkhead_outbox set last_error = ${error},
          next_attempt_at = now() + ${delay} * interval '1 millisecond'
        where ${mine}`;
    });
    if (updated.count === 0)
      log.warn(
        { attempt: item.attempt, leaseMs },
        'outbox lease lapsed during the delivery; another attempt owns the row now',
      );
  }
  const [next] = await sql<{ at: Date | null }[]>`
    select min(next_attempt_at) as at from bulkhead_outbox where server = ${server} and status = 'pending'`;
  return { handled, more, nextDueAt: next?.at ?? null };
}
