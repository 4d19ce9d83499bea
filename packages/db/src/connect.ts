import postgres from 'postgres';

/** A postgres.js client; every query in Bulkhead goes through one of these. */
export type Sql = postgres.Sql;

/** Options for {@link createSql}. */
export interface SqlOptions {
  /** Maximum connections in the pool (default 10). */
  max?: number;
  /** Application name shown in `pg_stat_activity`. */
  applicationName?: string;
  /** Seconds to wait for a connection before failing the query (default 3: a call fails fast in an outage). */
  connectTimeout?: number;
  /** Every connection opens read-only (`default_transaction_read_only`): a write sent on it fails in the database. */
  readOnly?: boolean;
}

/**
 * Errors that mean the database could not be reached, refused another connection or lost one, or
 * that the server reached cannot write now (a standby during a failover): not that a query was wrong.
 */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return (
    typeof code === 'string' &&
    (/^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|CONNECT_TIMEOUT|CONNECTION_CLOSED|CONNECTION_ENDED|CONNECTION_DESTROYED)$/.test(
      code,
    ) ||
      // 53300: the server, or the login role's CONNECTION LIMIT, has no connection to give.
      // 25006: the server reached cannot write now: a standby, or one being promoted or demoted in a
      // failover (a proxy routes to it a moment before or after the switch). Nothing was written.
      /^(08|57P0|53300|25006)/.test(code))
  );
}

/** Opens a connection pool to `url`. Notices are dropped: they are not errors and would only add noise. */
export function createSql(url: string, options: SqlOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: {
      application_name: options.applicationName ?? 'bulkhead',
      ...(options.readOnly ? { default_transaction_read_only: true } : {}),
    },
    idle_timeout: 30,
    connect_timeout: options.connectTimeout ?? 3,
    // After a failed connection postgres.js waits before the next attempt, by default up to 20 s, while the
    // queries queued for it wait too: an outage would hang calls for that long. Retry within half a second,
    // so that a query fails fast while the database is away and runs at once when it is back.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
  });
}

/** True when the database answers a trivial query within `timeoutMs`. */
export async function isReachable(sql: Sql, timeoutMs = 2000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      sql`select 1`,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
