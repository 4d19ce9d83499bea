import type { AuditWriter } from '@bulkhead/audit';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db';
import { connectTestClient, issueTestToken, startTestServer } from '@bulkhead/core/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** Records nothing: the baseline that isolates what the audit log costs. */
const discard: AuditWriter = {
  append: async (e) => ({ ...e, seq: 0, id: '', at: new Date(), chainSeq: 0 }) as never,
  check: async () => {},
};

async function measure(audit: AuditWriter | undefined, token: string, calls: number): Promise<number[]> {
  const server = await startTestServer(devKnowledgeServer, {
    sql: db.sql,
    rateLimitPerMinute: 0,
    ...(audit ? { audit } : {}),
  });
  const client = await connectTestClient(server.url, token, 'bench');
  const times: number[] = [];
  for (let i = 0; i < calls + 20; i++) {
    const t = performance.now();
    await client.callTool({ name: 'search_docs', arguments: { query: 'rotate token' } });
    if (i >= 20) times.push(performance.now() - t);
  }
  await client.close();
  await server.close();
  return times.sort((a, b) => a - b);
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

it('measures what the audit log adds to a tool call', async () => {
  const token = await issueTestToken(db.sql, devKnowledgeServer);
  const without = await measure(discard, token, 200);
  const withAudit = await measure(undefined, token, 200);
  const rows = {
    without_audit: { p50: pct(without, 50), p95: pct(without, 95) },
    with_audit: { p50: pct(withAudit, 50), p95: pct(withAudit, 95) },
  };
  const added = rows.with_audit.p50 - rows.without_audit.p50;
  console.log(
    `audit latency (200 sequential calls each, ${process.env.BULKHEAD_TEST_DB} db): ` +
      `without p50 ${rows.without_audit.p50.toFixed(2)} ms p95 ${rows.without_audit.p95.toFixed(2)} ms; ` +
      `with p50 ${rows.with_audit.p50.toFixed(2)} ms p95 ${rows.with_audit.p95.toFixed(2)} ms; added p50 ${added.toFixed(2)} ms`,
  );
  expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(220);
  expect(added).toBeLessThan(15);
}, 60_000);
