import { isConnectionError, type Sql } from '@bulkhead/db';

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
      return Reflect.apply(target as never, self, args) as unknown;
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

/** A time limit as `statement_timeout` takes it: whole milliseconds, at least one (0 would mean none). */
const timeoutSetting = (ms: number) => String(Math.max(1, Math.ceil(ms)));

/**
 * Opens the call's transaction settings in one statement: the customer the row policies fence on
 * (none: no customer rows), and the tool's time limit as the statement timeout, so that a query still
 * running at the limit is stopped by the database itself and the connection goes back to the pool.
 * Returns the backend's pid, so that a cancelled call can stop its running query.
 */
export async function openCallTransaction(
  tx: TransactionSql,
  o: { customerId: string | null; timeoutMs: number },
): Promise<number> {
  const [row] = await tx<{ pid: number }[]>`
    select pg_backend_pid() as pid,
      set_config('bulkhead.customer_id', ${o.customerId ?? ''}, true),
      set_config('statement_timeout', ${timeoutSetting(o.timeoutMs)}, true)`;
  return row!.pid;
}

/** The settings of one call: the customer the row policies fence on, and its time limit. */
export interface CallSettings {
  customerId: string | null;
  timeoutMs: number;
  /** The backend's pid, once known: a cancelled call stops its running query with it. */
  onPid: (pid: number) => void;
}

/**
 * Runs one read-only call on a connection of its own, outside any transaction: one statement sets the
 * customer and the time limit for the session, sent in the same write as the handler's first query
 * (postgres.js pipelines the queries of one connection), so a read takes the round trips of its own
 * queries and nothing more. Read Committed gives each statement its own snapshot whether or not a
 * transaction surrounds it, so a read loses nothing by having none.
 *
 * `reads` is a pool opened read-only that serves nothing but such calls: every call sets its own
 * settings before its first query, so what the previous one left is never seen. Without it the
 * connection comes from `sql`, is also put in read-only mode by that statement, and `RESET ALL` puts
 * it back as it was before it returns to the pool (without the caller waiting for it). Either way a
 * write slipping into a read-only tool fails in the database.
 */
export async function withReadConnection<T>(
  sql: Sql,
  reads: Sql | undefined,
  settings: CallSettings,
  fn: (conn: Sql) => Promise<T>,
): Promise<T> {
  const conn = await (reads ?? sql).reserve();
  let pid: number | undefined;
  try {
    const opened = conn<{ pid: number }[]>`
      select pg_backend_pid() as pid,
        set_config('bulkhead.customer_id', ${settings.customerId ?? ''}, false),
        set_config('statement_timeout', ${timeoutSetting(settings.timeoutMs)}, false),
        set_config('default_transaction_read_only', 'on', false)`.then(([row]) => {
      pid = row!.pid;
      settings.onPid(pid);
    });
    opened.catch(() => {});
    const value = await fn(conn);
    await opened;
    return value;
  } finally {
    if (reads) conn.release();
    // Queued behind whatever still runs on the connection; the connection goes back to the pool only once
    // it is reset (postgres.js drops what a reserved connection still queues when it is released).
    else
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
