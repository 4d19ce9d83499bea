// The database room: the connection a call runs on. guarded-sql (the handler's view of its transaction,
// and `withReadConnection` for read-only calls), read-lanes (the read pool, shared by calls of no
// customer) and session-check (a session-bound connection caught when a pooler moves it).
import { isConnectionError, type Sql } from '@bulkhead/db';
import { proofSetting, timeoutSetting, type ReadLanes, type ReadSettings } from './read-lanes.ts';
import { waitAtMost } from '../call/time-limit.ts';
import { activeSpan, inSpan, SpanKind, statementSummary } from '../observability/tracing.ts';

/** postgres.js's transaction type, reached through `begin` so that core needs no direct dependency on postgres. */
export type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * The handler's view of its transaction: after the call is stopped (time limit, cancellation) no
 * further query is accepted, so a late query cannot slip into the commit; and `begin` opens a
 * savepoint, so handlers written with `ctx.sql.begin` work unchanged inside the kit's transaction.
 */
export function guardedSql(tx: TransactionSql | Sql, signal: AbortSignal): Sql {
  const refuse = () => {
    if (signal.aborted) throw new Error('the call was stopped; no further queries');
  };
  return new Proxy(tx, {
    apply(target, self, args) {
      refuse();
      return traced(Reflect.apply(target as never, self, args) as unknown, args[0]);
    },
    get(target, prop, receiver) {
      if (prop === 'begin')
        return (a: unknown, b: unknown) => {
          refuse();
          if (!('savepoint' in target))
            throw new Error(
              'ctx.sql.begin: a read-only tool runs outside a transaction (each query sees the latest committed data); ' +
                'a tool that needs one is not read-only',
            );
          return target.savepoint((typeof a === 'function' ? a : b) as never);
        };
      if (prop === 'unsafe')
        return (...args: Parameters<typeof target.unsafe>) => {
          refuse();
          return target.unsafe(...args);
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  }) as unknown as Sql;
}

/**
 * A statement of a traced call, as a span of its own that starts when the statement is sent (awaited)
 * and ends with its answer: named by its summary (`SELECT invoices`), from the static text alone.
 * A fragment (never awaited) makes no span. Untraced, the query is returned as it is.
 */
function traced(query: unknown, first: unknown): unknown {
  if (!activeSpan() || !Array.isArray(first) || !('raw' in first)) return query;
  const summary = statementSummary(first as readonly string[]);
  const attributes = { 'db.system.name': 'postgresql', 'db.query.summary': summary };
  return new Proxy(query as object, {
    get(target, prop, receiver) {
      if (prop !== 'then') return Reflect.get(target, prop, receiver) as unknown;
      return (ok?: (v: unknown) => unknown, fail?: (e: unknown) => unknown) =>
        inSpan(summary, { kind: SpanKind.CLIENT, attributes }, () => target as Promise<unknown>).then(
          ok,
          fail,
        );
    },
  });
}

/**
 * Opens the call's transaction settings in one statement: the proof of the call's token, from which
 * the database derives the customer the row policies fence on (none: no customer rows), and the tool's
 * time limit as the statement timeout, so that a query still running at the limit is stopped by the
 * database itself and the connection goes back to the pool. Returns the backend's pid, so that a
 * cancelled call can stop its running query.
 *
 * An approved call has no token to present: `approvalId` names the approval it runs, which the
 * database accepts as proof of its customer only while this transaction holds its claim on it.
 */
export async function openCallTransaction(
  tx: TransactionSql,
  o: ReadSettings & { approvalId?: string },
): Promise<number> {
  const approval = o.approvalId
    ? tx`, set_config('bulkhead.customer_approval', ${o.approvalId}, true)`
    : tx``;
  const [row] = await tx<{ pid: number }[]>`
    select pg_backend_pid() as pid,
      set_config('bulkhead.customer_id', ${o.customerId ?? ''}, true),
      set_config('bulkhead.customer_token', ${proofSetting(o.proof)}, true),
      set_config('statement_timeout', ${timeoutSetting(o.timeoutMs)}, true) ${approval}`;
  return row!.pid;
}

/** The settings of one read-only call, and where it says which backend a withdrawn call may cancel. */
export interface CallSettings extends ReadSettings {
  onStoppable: (pid: () => number | undefined) => void;
  /** The client withdrew the call: stop waiting for a connection. */
  signal?: AbortSignal | undefined;
}

/**
 * Runs one read-only call outside any transaction: Read Committed gives each statement its own
 * snapshot whether or not a transaction surrounds it, so a read loses nothing by having none.
 *
 * With `reads` (the server's read pool, see `createReadLanes`) the call runs on a lane set to its
 * customer and time limit, shared with the calls that have the same. Without it, the call reserves a
 * connection of `sql`: one statement sets the customer, the time limit and read-only mode for the
 * session, sent in the same write as the handler's first query (postgres.js pipelines the queries of
 * one connection), and `RESET ALL` puts it back as it was before it returns to the pool (without the
 * caller waiting for it). Either way a write slipping into a read-only tool fails in the database,
 * and the call waits for its connection no longer than its time limit (`NoConnectionInTime`).
 */
export async function withReadConnection<T>(
  sql: Sql,
  reads: ReadLanes | undefined,
  settings: CallSettings,
  fn: (conn: Sql) => Promise<T>,
): Promise<T> {
  if (reads) return reads.run(settings, fn, settings.onStoppable, settings.signal);
  // Waiting for a connection counts against the call's time limit; one that comes later goes straight back.
  const reserving = sql.reserve();
  const conn = await waitAtMost(
    reserving,
    performance.now() + settings.timeoutMs,
    settings.timeoutMs,
    settings.signal,
  ).catch((err: unknown) => {
    reserving.then(
      (late) => late.release(),
      () => {},
    );
    throw err;
  });
  let pid: number | undefined;
  settings.onStoppable(() => pid);
  try {
    const opened = conn<{ pid: number }[]>`
      select pg_backend_pid() as pid,
        set_config('bulkhead.customer_id', ${settings.customerId ?? ''}, false),
        set_config('bulkhead.customer_token', ${proofSetting(settings.proof)}, false),
        set_config('statement_timeout', ${timeoutSetting(settings.timeoutMs)}, false),
        set_config('default_transaction_read_only', 'on', false)`.then(([row]) => {
      pid = row!.pid;
    });
    opened.catch(() => {});
    const value = await fn(conn);
    await opened;
    return value;
  } finally {
    // Queued behind whatever still runs on the connection; the connection goes back to the pool only once
    // it is reset (postgres.js drops what a reserved connection still queues when it is released).
    void conn`reset all`.then(
      () => conn.release(),
      async (err: unknown) => {
        // A connection whose settings could not be put back is given to no one else: its backend ends.
        if (!isConnectionError(err) && pid !== undefined)
          await sql`select pg_terminate_backend(${pid})`.catch(() => {});
        conn.release();
      },
    );
  }
}
