import { migrate, openDatabase, type Database } from '@bulkhead/db';
import { refreshPrivileges } from './deployable-roles.ts';
import type { CliEnv } from './env.ts';
import type { Io } from './io.ts';

/**
 * Runs `fn` with a database: `DATABASE_URL`, else the running embedded
 * server, else an embedded server started for this command alone (and
 * stopped after it). Migrations are applied first so that every command sees
 * the current schema, unless `BULKHEAD_MIGRATE=false` (a role that may not migrate).
 */
export async function withDatabase<T>(
  env: CliEnv,
  io: Io,
  fn: (db: Database) => Promise<T>,
  options: { migrate?: boolean } = {},
): Promise<T> {
  const db = await openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: 'bulkhead-cli',
    max: 4,
    log: (line) => io.progress(line),
  });
  try {
    if (options.migrate !== false && env.BULKHEAD_MIGRATE) {
      const { applied } = await migrate(db.sql);
      if (applied.length) await refreshPrivileges(db.sql);
    }
    return await fn(db);
  } finally {
    await db.close();
  }
}
