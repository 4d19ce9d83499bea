import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSql } from './connect.ts';
import { loadMigrations, migrate } from './migrate.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
});
afterAll(async () => {
  await db.drop();
});

it('applies every migration exactly once when two sessions migrate at the same time, and again is a no-op', async () => {
  const all = await loadMigrations();
  expect(all.map((m) => m.version)).toEqual([...all.map((m) => m.version)].sort((a, b) => a - b));
  const one = createSql(db.url, { max: 1 });
  const two = createSql(db.url, { max: 1 });
  const [a, b] = await Promise.all([migrate(one), migrate(two)]);
  expect([a.applied.length, b.applied.length].sort((x, y) => x - y)).toEqual([0, all.length]);
  const recorded = await db.sql<
    { version: number }[]
  >`select version from bulkhead_migrations order by version`;
  expect(recorded.map((r) => r.version)).toEqual(all.map((m) => m.version));
  expect((await migrate(one)).applied).toEqual([]);
  await one.end();
  await two.end();
});

it('rolls a failing migration back whole', async () => {
  const fresh = await createTestDatabase({ migrate: false });
  try {
    const broken = [
      { version: 1, name: '0001_ok', sql: 'create table first_table (id int)' },
      {
        version: 2,
        name: '0002_broken',
        sql: 'create table second_table (id int); select * from no_such_table',
      },
    ];
    await expect(migrate(fresh.sql, broken)).rejects.toThrow(/no_such_table/);
    const [exists] =
      await fresh.sql`select to_regclass('first_table') as t, to_regclass('bulkhead_migrations') as m`;
    expect(exists).toEqual({ t: null, m: null });
  } finally {
    await fresh.drop();
  }
});

it('refuses a pending migration older than one already applied', async () => {
  const fresh = await createTestDatabase({ migrate: false });
  try {
    const first = { version: 1, name: '0001_a', sql: 'create table a_table (id int)' };
    const third = { version: 3, name: '0003_c', sql: 'create table c_table (id int)' };
    const second = { version: 2, name: '0002_b', sql: 'create table b_table (id int)' };
    await migrate(fresh.sql, [first, third]);
    await expect(migrate(fresh.sql, [first, second, third])).rejects.toThrow(
      'migration 0002_b is older than 3, already applied',
    );
  } finally {
    await fresh.drop();
  }
});

it('waits a bounded time for the migration lock another process holds, then says who holds it', async () => {
  const fresh = await createTestDatabase({ migrate: false });
  const holder = createSql(fresh.url, { max: 1 });
  const runner = createSql(fresh.url, { max: 1 });
  try {
    const one = [{ version: 1, name: '0001_table', sql: 'create table locked_out (id int)' }];
    // Another process in the middle of migrating holds the lock.
    await holder`select pg_advisory_lock(${0x6275_6c6b})`;
    const started = Date.now();
    await expect(migrate(runner, one, { lockWaitMs: 400 })).rejects.toThrow(
      /another process has been migrating this database for over 400 ms \(it holds the migration lock\)/,
    );
    // It waited for the lock (a slower machine only waits longer), and the rejection itself shows the wait
    // ends: with no bound it would wait on the held lock until the test timed out.
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    // Once it lets go, migrating goes through.
    await holder`select pg_advisory_unlock(${0x6275_6c6b})`;
    expect((await migrate(runner, one, { lockWaitMs: 400 })).applied).toEqual(['0001_table']);
  } finally {
    await holder.end();
    await runner.end();
    await fresh.drop();
  }
});
