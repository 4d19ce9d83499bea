import type { Sql } from '@bulkhead/db';

/** postgres.js's transaction type. */
export type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * Runs `fn` in a short read transaction that names the operator (`bulkhead.operator`, local to the
 * transaction): only then does the console's role read the whole audit log and not just the events of
 * approvals. The database checks that the named token is a live approver token with tokens:manage.
 */
export async function asOperator<T>(
  sql: Sql,
  tokenId: string,
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  return sql.begin('read only', async (tx) => {
    await tx`select set_config('bulkhead.operator', ${tokenId}, true)`;
    return fn(tx);
  }) as Promise<T>;
}
