import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from './connect.ts';
import { migrate } from './migrate.ts';

/** A throwaway, migrated database for one test file. */
export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/**
 * Creates a fresh database on the server behind `BULKHEAD_TEST_ADMIN_URL`
 * (set by the test global setup: the real Postgres in CI or the embedded
 * default), migrates it and returns it. Each test file gets its own, so
 * files can run in parallel without seeing each other's rows.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  // The test harness's one handshake with the global setup, which sets this variable.
  const adminUrl = process.env.BULKHEAD_TEST_ADMIN_URL;
  if (!adminUrl)
    throw new Error('BULKHEAD_TEST_ADMIN_URL is not set: run tests through vitest with the global setup');
  const name = `bh_test_${randomBytes(6).toString('hex')}`;
  const admin = createSql(adminUrl, { max: 1 });
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const target = new URL(adminUrl);
  target.pathname = `/${name}`;
  const url = target.toString();
  const sql = createSql(url, { max: 20 });
  if (options.migrate !== false) await migrate(sql);
  return {
    url,
    sql,
    drop: async () => {
      await sql.end({ timeout: 5 });
      const again = createSql(adminUrl, { max: 1 });
      await again.unsafe(`drop database if exists ${name} with (force)`);
      await again.end();
    },
  };
}
