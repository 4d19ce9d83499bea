import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSql } from './connect.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase({ migrate: false });
});
afterAll(async () => {
  await db.drop();
});

// postgres.js 3.4.9 throws from a timer when a connection's backend dies while a write waits for its
// turn (porsager/postgres#1154, #1208): uncatchable, it takes the whole process down. Its connections
// also keep the dead session's pending query and error, so the next transaction on them fails with a
// stale "terminating connection" or waits forever. The repository carries a patch
// (patches/postgres@3.4.9.patch) that fails the write's queries and starts the next session clean;
// unpatched, this test dies within a few rounds with "Cannot read properties of null (reading 'write')".
it('transactions whose backend is terminated mid-way fail with catchable errors, and the next one commits', async () => {
  const sql = createSql(db.url, { max: 2 });
  try {
    const outcomes: string[] = [];
    for (let round = 0; round < 30; round++) {
      outcomes.push(
        await sql
          .begin(async (tx) => {
            const [row] = await tx<{ pid: number }[]>`select pg_backend_pid() as pid`;
            await Promise.allSettled([
              db.sql`select pg_terminate_backend(${row!.pid})`,
              tx`select pg_sleep(0.01)`,
              tx`select 1`,
              tx`select 2`,
            ]);
            return 'committed';
          })
          .catch((err: Error) =>
            /terminat|CONNECTION_|closed|ECONNRESET/i.test(err.message) ? 'failed' : err.message,
          ),
      );
    }
    expect(outcomes.filter((o) => o !== 'committed' && o !== 'failed')).toEqual([]);
    let answer: unknown;
    for (let i = 0; i < 10 && answer === undefined; i++)
      answer = await sql`select 42 as n`.then(
        (rows) => rows,
        () => undefined,
      );
    expect(answer).toEqual([{ n: 42 }]);
  } finally {
    await sql.end({ timeout: 1 });
  }
});
