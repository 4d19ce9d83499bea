import type { Sql } from '@bulkhead/db';

/** postgres.js's transaction type, reached through `begin` so that core needs no direct dependency on postgres. */
export type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * The handler's view of its transaction: after the call is stopped (time limit, cancellation) no
 * further query is accepted, so a late query cannot slip into the commit; and `begin` opens a
 * savepoint, so handlers written with `ctx.sql.begin` work unchanged inside the kit's transaction.
 */
export function guardedSql(tx: TransactionSql, signal: AbortSignal): Sql {
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
      set_config('statement_timeout', ${String(Math.max(1, Math.ceil(o.timeoutMs)))}, true)`;
  return row!.pid;
}
