import type { Sql } from '@bulkhead/db';

/** postgres.js's transaction type. */
export type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * Runs `fn` in a short transaction in which the operator proved themselves (`bulkhead_console_prove`,
 * with their session or token secret): only then does the console's role read the whole audit log and
 * not just the events of approvals. The database records the proof for this transaction in a table of
 * its own (so the transaction is not read-only: that row is its one write) and checks that it names a
 * live approver token with tokens:manage. A proof that names no operator reads only approvals' events.
 */
export async function asOperator<T>(
  sql: Sql,
  proof: string,
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  return sql.begin(async (tx) => {
    await tx`select 1 from bulkhead_console_prove(${proof})`;
    return fn(tx);
  }) as Promise<T>;
}
