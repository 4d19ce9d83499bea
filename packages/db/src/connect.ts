import postgres from 'postgres';

/** A postgres.js client; every query in Bulkhead goes through one of these. */
export type Sql = postgres.Sql;

/** Options for {@link createSql}. */
export interface SqlOptions {
  /** Maximum connections in the pool (default 10). */
  max?: number;
  /** Application name shown in `pg_stat_activity`. */
  applicationName?: string;
}

/** Opens a connection pool to `url`. Notices are dropped: they are not errors and would only add noise. */
export function createSql(url: string, options: SqlOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'bulkhead' },
    idle_timeout: 30,
    connect_timeout: 10,
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
