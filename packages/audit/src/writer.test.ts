import { createServer, type Socket } from 'node:net';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAuditWriter } from './writer.ts';
import { FIELD_LIMITS, MAX_DEPTH } from './normalise.ts';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const base = { server: 'admin', method: 'tools/call', outcome: 'ok' as const, requestId: 'r', durationMs: 1 };

/** How many transactions committed the events whose request id starts with `prefix-`, and how many events. */
async function xacts(prefix: string): Promise<{ n: number; events: number }> {
  const [row] = await db.sql<{ n: number; events: number }[]>`
    select count(distinct xmin::text)::int as n, count(*)::int as events
    from audit_events where request_id like ${`${prefix}-%`}`;
  return row!;
}

it('stores any value a client can send in any field — NUL, lone surrogates, control characters, huge and deep values — as the bounded form it returns', async () => {
  const audit = createAuditWriter(db.sql);
  let deep: unknown = 'bottom';
  for (let i = 0; i < 3000; i++) deep = { d: deep };
  const event = await audit.append({
    ...base,
    tool: `x\ud800${'t'.repeat(5000)}`,
    method: 'tools/\u0000call',
    requestId: 'r\u0000\r\nid',
    clientName: 'evil\u0000client\u001b[31m',
    clientVersion: '\udc00v1',
    tokenLabel: 'label\u0007',
    arguments: {
      'k\u0000ey': 'v\u0000al',
      lone: 'a\ud800b',
      deep,
      big: Array.from({ length: 5 }, () => 'x'.repeat(20_000)),
    },
    resultSummary: { error: 'bad\u0000' },
  });
  expect(event.method).toBe('tools/\ufffdcall');
  expect(event.requestId).toBe('r\ufffd\ufffd\ufffdid');
  expect(event.clientName).toBe('evil\ufffdclient\ufffd[31m');
  expect(event.clientVersion).toBe('\ufffdv1');
  expect(event.tokenLabel).toBe('label\ufffd');
  expect(event.tool!.length).toBe(FIELD_LIMITS.tool);
  expect(event.tool!.startsWith('x\ufffdttt')).toBe(true);
  expect(event.tool!.endsWith('…[+4802 chars]')).toBe(true);
  // Larger than 64 KiB: stored as its size, hash and keys.
  expect(JSON.stringify(event.arguments).length).toBeLessThan(1000);
  expect(event.arguments).toMatchObject({
    _bulkhead_truncated: true,
    keys: ['k\ufffdey', 'lone', 'deep', 'big'],
  });
  expect(event.resultSummary).toEqual({ error: 'bad\ufffd' });

  const [row] = await db.sql`
    select tool, method, request_id, client_name, client_version, token_label, arguments, result_summary
    from audit_events where id = ${event.id}`;
  expect(row).toEqual({
    tool: event.tool,
    method: event.method,
    request_id: event.requestId,
    client_name: event.clientName,
    client_version: event.clientVersion,
    token_label: event.tokenLabel,
    arguments: event.arguments,
    result_summary: event.resultSummary,
  });
});

it('cuts JSON deeper than the limit with a marker instead of failing', async () => {
  const audit = createAuditWriter(db.sql);
  let deep: unknown = 'bottom';
  for (let i = 0; i < 40; i++) deep = [deep];
  const event = await audit.append({ ...base, arguments: { deep } });
  let node = (event.arguments as { deep: unknown }).deep;
  let depth = 1;
  while (Array.isArray(node)) {
    node = node[0];
    depth++;
  }
  expect(depth).toBe(MAX_DEPTH);
  expect(node).toBe(`[nested deeper than ${MAX_DEPTH} levels]`);
});

it('commits events appended together in one statement, numbered by the database, each resolved once committed', async () => {
  const audit = createAuditWriter(db.sql);
  const events = await Promise.all(
    Array.from({ length: 300 }, (_, i) => audit.append({ ...base, requestId: `batch-${i}` })),
  );
  const rows = await db.sql<{ request_id: string; seq: string }[]>`
    select request_id, seq from audit_events where request_id like 'batch-%' order by seq`;
  expect(rows.length).toBe(300);
  expect(new Set(rows.map((r) => r.seq)).size).toBe(300);
  expect(events.map((e) => e.requestId)).toEqual(Array.from({ length: 300 }, (_, i) => `batch-${i}`));
  // Many events per transaction: far fewer commits than events.
  expect((await xacts('batch')).n).toBeLessThan(30);
});

it('while busy, a batch waits a few milliseconds for company; an idle writer writes each event at once', async () => {
  // A steady trickle, one event every half millisecond or so, as from a server under load: without
  // waiting, each commit would carry the one or two events that arrived while the last one committed.
  const busy = createAuditWriter(db.sql, { lingerMs: 20 });
  const trickle: Promise<unknown>[] = [];
  for (let i = 0; i < 200; i++) {
    trickle.push(busy.append({ ...base, requestId: `trickle-${i}` }));
    if (i % 2) await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(trickle);
  const batched = await xacts('trickle');
  expect(batched.events).toBe(200);
  expect(batched.n).toBeLessThan(40);

  // One event at a time, each awaited: never waits, whatever the linger, each its own commit. The
  // linger is a minute: had a lone event waited for company even once, the test would time out.
  const idle = createAuditWriter(db.sql, { lingerMs: 60_000 });
  for (let i = 0; i < 20; i++) await idle.append({ ...base, requestId: `lone-${i}` });
  expect(await xacts('lone')).toEqual({ n: 20, events: 20 });
});

it('under a server role the database records that server and role, whatever the writer claims', async () => {
  const { sql } = await db.as('dev-knowledge');
  const audit = createAuditWriter(sql);
  const event = await audit.append({ ...base, server: 'admin', requestId: 'claims-admin' });
  const [row] = await db.sql`select server, db_role from audit_events where id = ${event.id}`;
  expect(row).toEqual({ server: 'dev-knowledge', db_role: 'bulkhead_dev_knowledge_login' });
  await expect(
    audit.appendIn(sql, {
      ...base,
      server: 'console',
      method: 'approvals/decide',
      outcome: 'approved',
      requestId: 'forged',
    }),
  ).rejects.toThrow(/only the console records decisions/);
  // A server role may not read the log it writes to.
  await expect(sql`select count(*) from audit_events`).rejects.toThrow(/permission denied/);
});

it('a batch with one event the database refuses still commits the others', async () => {
  const { sql } = await db.as('dev-knowledge');
  const audit = createAuditWriter(sql);
  const results = await Promise.allSettled([
    audit.append({ ...base, requestId: 'ok-1' }),
    audit.append({ ...base, method: 'approvals/decide', outcome: 'approved', requestId: 'refused' }),
    audit.append({ ...base, requestId: 'ok-2' }),
  ]);
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  const rows =
    await db.sql`select request_id from audit_events where request_id in ('ok-1', 'ok-2', 'refused') order by request_id`;
  expect(rows.map((r) => r.request_id)).toEqual(['ok-1', 'ok-2']);
});

// A proxy with no primary (HAProxy during a failover) accepts connections and answers nothing until
// they time out. A refusal's event must not keep its answer waiting for that: keep() resolves after
// keepWaitMs while the write goes on, and the event is held once the connection is known lost.
it('keep() does not wait out a database that stalls: it resolves while the write goes on, then holds the event', async () => {
  const sockets: Socket[] = [];
  const stall = createServer((s) => sockets.push(s));
  await new Promise<void>((resolve) => stall.listen(0, '127.0.0.1', resolve));
  const url = new URL(db.url);
  url.port = String((stall.address() as { port: number }).port);
  const sql = createSql(url.toString(), { max: 1, connectTimeout: 60 });
  const audit = createAuditWriter(sql, { keepWaitMs: 100, retryMs: 60_000 });
  try {
    await audit.keep({ ...base, outcome: 'unavailable', requestId: 'stalled' });
    // Resolved though the connection is still waiting for its first answer: nothing failed, nothing held yet.
    expect(sockets.length).toBe(1);
    expect(audit.held.waiting).toBe(0);
    // The database is gone (the stalled connection lost, new ones refused): the event is held for when it is back.
    stall.close();
    for (const s of sockets) s.destroy();
    for (let i = 0; i < 100 && audit.held.waiting === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(audit.held).toEqual({ waiting: 1, dropped: 0 });
  } finally {
    await sql.end({ timeout: 1 });
    stall.close();
  }
});
