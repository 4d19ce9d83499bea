import { createTestDatabase } from '@bulkhead/db/testing';
import { expect, it } from 'vitest';

// As the suite's files do: a database of its own on the cluster the global setup gave the run.
it('queries a database of its own on the database the run was given', async () => {
  const db = await createTestDatabase();
  try {
    const [row] = await db.sql<{ one: number }[]>`select 1 as one`;
    expect(row?.one).toBe(1);
    // The test harness's kind of database, as test/harness.test.ts asked for it.
    expect(process.env.BULKHEAD_TEST_DB).toBe(process.env.BULKHEAD_HARNESS_DB);
  } finally {
    await db.drop();
  }
});
