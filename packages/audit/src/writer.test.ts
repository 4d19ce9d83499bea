import { createTestDatabase, type TestDatabase } from '@bulkhead/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pruneEvents } from './prune.ts';
import { verifyChains } from './verify.ts';
import { createAuditWriter } from './writer.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

it('records any arguments a client can send — lone surrogates, NUL in values and keys — and the chain still verifies', async () => {
  const audit = createAuditWriter(db.sql);
  const event = await audit.append({
    server: 'admin',
    method: 'tools/call',
    tool: 'escalate_ticket',
    outcome: 'ok',
    requestId: 'r1',
    durationMs: 1,
    arguments: {
      reason: 'needs a look \ud800 now',
      'k\u0000ey': 'v\u0000al',
      nested: { ['\udc00']: [1, 'x\udfff'] },
    },
  });
  expect(event.arguments).toEqual({
    reason: 'needs a look \ufffd now',
    'k\ufffdey': 'v\ufffdal',
    nested: { '\ufffd': [1, 'x\ufffd'] },
  });
  const [row] = await db.sql`select arguments from audit_events where id = ${event.id}`;
  expect(row!.arguments).toEqual(event.arguments);
  expect((await verifyChains(db.sql))[0]!.break).toBeNull();
});

it('prunes in batches, each leaving a chain that verifies from its signed checkpoint', async () => {
  const fresh = await createTestDatabase();
  try {
    const audit = createAuditWriter(fresh.sql);
    for (let i = 0; i < 25; i++) {
      await audit.append({
        server: 'admin',
        method: 'tools/call',
        outcome: 'ok',
        requestId: `r${i}`,
        durationMs: 1,
      });
    }
    const [cut] = await fresh.sql`select at from audit_events where chain_seq = 21`;
    expect(await pruneEvents(fresh.sql, cut!.at as Date, 'k'.repeat(32), 7)).toEqual([
      { server: 'admin', removed: 20, checkpoint: 20 },
    ]);
    const [report] = await verifyChains(fresh.sql, { key: 'k'.repeat(32) });
    expect(report).toEqual({ server: 'admin', events: 5, checkpoint: 20, break: null });
    const next = await audit.append({
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'after',
      durationMs: 1,
    });
    expect(next.chainSeq).toBe(26);
  } finally {
    await fresh.drop();
  }
});
