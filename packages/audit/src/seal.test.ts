import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { Outcome } from './events.ts';
import { pruneLog } from './prune.ts';
import { LEASE_MS, takeLease } from './lease.ts';
import { SEALED_WHEN_SET } from './columns.ts';
import { sealLog, startSealer } from './seal.ts';
import { readBodies, SEALED_COLUMNS } from './sealed-body.ts';
import { verifyLog } from './verify.ts';
import { createAuditWriter } from './writer.ts';

const KEY = 'k'.repeat(43);
let db: TestDatabase;

beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

/** Appends `n` events under `server`'s own role, as that server would. */
async function appendAs(server: string, n: number, outcome: Outcome = 'ok'): Promise<void> {
  const audit = createAuditWriter((await db.as(server)).sql);
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      audit.append({
        server,
        method: 'tools/call',
        tool: 'search_docs',
        outcome,
        requestId: `${server}-${i}`,
        durationMs: i,
        arguments: { query: `query ${i}` },
      }),
    ),
  );
}

/** Tampering needs the owner, with the append-only trigger out of the way: what an owner could do. */
async function asOwnerWithoutTriggers(work: (sql: Sql) => Promise<unknown>): Promise<void> {
  await db.sql.begin(async (tx) => {
    await tx`alter table audit_events disable trigger user`;
    await tx`alter table audit_seals disable trigger user`;
    await work(tx as unknown as Sql);
    await tx`alter table audit_events enable trigger user`;
    await tx`alter table audit_seals enable trigger user`;
  });
}

const kinds = (r: Awaited<ReturnType<typeof verifyLog>>) =>
  r.breaks.map((b) => `${b.kind}:${b.seq ?? b.sealNo}`);

it('refuses UPDATE, DELETE and TRUNCATE of events and seals, even to the owner; a server role cannot prune', async () => {
  await appendAs('dev-knowledge', 2);
  await sealLog(db.sql, KEY);
  for (const [table, column] of [
    ['audit_events', 'outcome'],
    ['audit_seals', 'mac'],
  ] as const) {
    await expect(db.sql`update ${db.sql(table)} set ${db.sql(column)} = ${db.sql(column)}`).rejects.toThrow(
      /append-only: UPDATE refused/,
    );
    await expect(db.sql`delete from ${db.sql(table)}`).rejects.toThrow(/append-only: DELETE refused/);
    await expect(db.sql`truncate ${db.sql(table)}`).rejects.toThrow(/append-only: TRUNCATE refused/);
  }
  // The prune flag opens DELETE to the owner only: a server role that sets it is still refused.
  const server = (await db.as('dev-knowledge')).sql;
  await expect(
    server.begin(async (tx) => {
      await tx`select set_config('bulkhead.audit_prune', 'on', true)`;
      await tx`delete from audit_events`;
    }),
  ).rejects.toThrow(/permission denied|append-only/);
  expect((await db.sql`select count(*)::int as n from audit_events`)[0]!.n).toBe(2);
});

it('seals what two server roles appended, and verify accounts for every event of every server', async () => {
  await appendAs('dev-knowledge', 30);
  await appendAs('customer', 12);
  const pass = await sealLog(db.sql, KEY);
  expect(pass.elected).toBe(true);
  expect(pass.seals.map((s) => s.events)).toEqual([42]);
  await appendAs('customer', 3);
  const report = await verifyLog(db.sql, { key: KEY });
  expect(report.ok).toBe(true);
  expect(report.breaks).toEqual([]);
  expect(report.servers).toEqual([
    { server: 'customer', sealed: 12, present: 12 },
    { server: 'dev-knowledge', sealed: 30, present: 30 },
  ]);
  expect(report.unsealed.count).toBe(3);
  expect(report.unsealed.oldestAt).toBeInstanceOf(Date);
  // The same key seals on: the second seal continues the first.
  expect((await sealLog(db.sql, KEY)).seals.map((s) => [s.sealNo, s.events])).toEqual([[2, 3]]);
  expect((await verifyLog(db.sql, { key: KEY })).ok).toBe(true);
});

it('seals the columns every seal before sealed, in the same order: a change here breaks every sealed log', () => {
  expect(SEALED_COLUMNS).toEqual([
    'seq',
    'id',
    'at',
    'server',
    'db_role',
    'token_id',
    'token_label',
    'client_name',
    'client_version',
    'method',
    'tool',
    'arguments',
    'outcome',
    'result_summary',
    'duration_ms',
    'request_id',
    'approval_id',
    'injection_suspected',
  ]);
});

it('a column added to the log by a later migration leaves every sealed event verifiable', async () => {
  await appendAs('customer', 5);
  await sealLog(db.sql, KEY);
  await db.sql`alter table audit_events add column added_later text default 'x'`;
  await appendAs('customer', 2);
  await sealLog(db.sql, KEY);
  const report = await verifyLog(db.sql, { key: KEY });
  expect(report.breaks).toEqual([]);
  expect(report.ok).toBe(true);
});

it('seals a trace id when an event has one, and an event without one exactly as every seal before 0042 did', async () => {
  expect(SEALED_WHEN_SET).toEqual(['trace_id']);
  const audit = createAuditWriter((await db.as('customer')).sql);
  const traceId = 'ab'.repeat(16);
  await appendAs('customer', 2);
  await audit.append({
    server: 'customer',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'r-t',
    durationMs: 1,
    traceId,
  });
  // The body as seals were made before trace_id existed: the same bytes for an event without one.
  const old = `jsonb_build_object(${SEALED_COLUMNS.map((c) => `'${c}', e.${c}`).join(', ')})::text`;
  const bodies = await db.sql.begin(async (tx) => {
    const now = await readBodies(tx, 0, 1_000, 1_000);
    const before = await tx<
      { body: string }[]
    >`select ${tx.unsafe(old)} as body from audit_events e order by seq`;
    return now.map((b, i) => [b.body === before[i]!.body, b.body.includes(`"trace_id": "${traceId}"`)]);
  });
  expect(bodies).toEqual([
    [true, false],
    [true, false],
    [false, true],
  ]);
  await sealLog(db.sql, KEY);
  expect((await verifyLog(db.sql, { key: KEY })).ok).toBe(true);
  const [plain, traced] = await db.sql<{ seq: string }[]>`
    select seq from audit_events order by seq offset 1 limit 2`;
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`update audit_events set trace_id = ${'cd'.repeat(16)} where seq = ${plain!.seq}`;
    await sql`update audit_events set trace_id = null where seq = ${traced!.seq}`;
  });
  expect(kinds(await verifyLog(db.sql, { key: KEY }))).toEqual([
    `event_changed:${plain!.seq}`,
    `event_changed:${traced!.seq}`,
  ]);
});

it('detects a rewritten event even when the writer recomputes anything it can without the key', async () => {
  await appendAs('dev-knowledge', 10);
  await sealLog(db.sql, KEY);
  const [target] = await db.sql<{ seq: string }[]>`
    select seq from audit_events order by seq offset 4 limit 1`;
  await asOwnerWithoutTriggers(
    (sql) => sql`update audit_events set arguments = '{"query":"harmless"}' where seq = ${target!.seq}`,
  );
  const report = await verifyLog(db.sql, { key: KEY });
  expect(report.ok).toBe(false);
  expect(kinds(report)).toEqual([`event_changed:${target!.seq}`]);
  expect(report.breaks[0]!.reason).toContain('differs from what was sealed');
});

it('detects events deleted from the sealed tail, a whole server deleted, and two events swapped', async () => {
  await appendAs('dev-knowledge', 8);
  await appendAs('customer', 4);
  await sealLog(db.sql, KEY);
  const seqs = (
    await db.sql<{ seq: string; server: string }[]>`select seq, server from audit_events order by seq`
  ).map((r) => ({ seq: Number(r.seq), server: r.server }));
  const dev = seqs.filter((s) => s.server === 'dev-knowledge').map((s) => s.seq);
  const last = seqs[seqs.length - 1]!.seq;
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`delete from audit_events where server = 'customer'`;
    // Swap the numbers of two events: tail and export would show them out of order.
    await sql`update audit_events set seq = -1 where seq = ${dev[0]!}`;
    await sql`update audit_events set seq = ${dev[0]!} where seq = ${dev[1]!}`;
    await sql`update audit_events set seq = ${dev[1]!} where seq = -1`;
  });
  const report = await verifyLog(db.sql, { key: KEY });
  expect(report.ok).toBe(false);
  const customer = seqs.filter((s) => s.server === 'customer').map((s) => `event_missing:${s.seq}`);
  expect(kinds(report).sort()).toEqual(
    [`event_changed:${dev[0]}`, `event_changed:${dev[1]}`, ...customer].sort(),
  );
  expect(report.servers).toEqual([
    { server: 'customer', sealed: 4, present: 0 },
    { server: 'dev-knowledge', sealed: 8, present: 8 },
  ]);
  expect(report.sealedThrough).toBe(last);
});

it('detects an event inserted into a sealed range, and an event written under another server by the owner', async () => {
  await appendAs('dev-knowledge', 3);
  // A number taken and never used: a transaction that rolled back leaves such gaps.
  const [gap] = await db.sql<{ seq: string }[]>`select nextval('audit_events_seq') as seq`;
  await appendAs('dev-knowledge', 2);
  await asOwnerWithoutTriggers(
    (sql) => sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (nextval('audit_events_seq'), gen_random_uuid(), now(), 'console', 'bulkhead_dev_knowledge_login',
        'approvals/decide', 'approved', 0, 'forged')`,
  );
  await sealLog(db.sql, KEY);
  const report = await verifyLog(db.sql, { key: KEY });
  // Sealed like any new event, but the database role that wrote it serves dev-knowledge.
  expect(report.breaks.map((b) => b.kind)).toEqual(['server_mismatch']);
  expect(report.breaks[0]!.reason).toContain(
    'names server console but was written by bulkhead_dev_knowledge_login',
  );

  await asOwnerWithoutTriggers(
    (sql) => sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (${gap!.seq}, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'late'),
        (0, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'before')`,
  );
  const again = await verifyLog(db.sql, { key: KEY });
  expect(again.breaks.map((b) => `${b.kind}:${b.seq}`).sort()).toEqual(
    [
      `event_unsealed:${gap!.seq}`,
      'event_in_pruned_range:0',
      `server_mismatch:${again.breaks.find((b) => b.kind === 'server_mismatch')!.seq}`,
    ].sort(),
  );
});

it('a server role cannot write under another name, decide, change, delete or read the log; forged rows by the owner are named', async () => {
  const { sql } = await db.as('customer');
  const audit = createAuditWriter(sql);
  await audit.appendIn(sql, {
    server: 'admin',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'r',
    durationMs: 0,
  });
  const [row] = await db.sql`select server from audit_events where request_id = 'r'`;
  expect(row!.server).toBe('customer');
  await expect(sql`update audit_events set outcome = 'ok'`).rejects.toThrow(/permission denied/);
  await expect(sql`delete from audit_events`).rejects.toThrow(/permission denied/);
  await expect(sql`insert into audit_seals (seal_no, sealed_at, first_seq, last_seq, events, seqs, digests, counts, totals, prev_mac, mac)
    values (1, now(), 1, 1, 0, '{}', '\\x', '{}', '{}', '', '')`).rejects.toThrow(/permission denied/);
});

it('a deleted tail of seals is caught by the anchor a previous verify recorded; a forged prune checkpoint by its signature', async () => {
  await appendAs('dev-knowledge', 4);
  await sealLog(db.sql, KEY);
  await appendAs('dev-knowledge', 4);
  const [second] = (await sealLog(db.sql, KEY)).seals;
  const anchor = { sealNo: second!.sealNo, mac: second!.mac };
  expect((await verifyLog(db.sql, { key: KEY, anchor })).ok).toBe(true);
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`delete from audit_events where seq >= ${second!.firstSeq}`;
    await sql`delete from audit_seals where seal_no = ${second!.sealNo}`;
  });
  // The count of seals made catches it without the anchor; the anchor too.
  const gone = await verifyLog(db.sql, { key: KEY });
  expect(kinds(gone)).toEqual([`seal_missing:${second!.sealNo}`]);
  expect(gone.breaks[0]!.reason).toBe(
    'seals up to 2 were made, but the log ends at seal 1: seals were deleted from the end',
  );
  const report = await verifyLog(db.sql, { key: KEY, anchor });
  expect(kinds(report)).toEqual([`seal_missing:${second!.sealNo}`, `anchor_mismatch:${second!.sealNo}`]);
  expect(report.breaks[1]!.reason).toContain('seals were deleted from the end');

  // The sealer seals the range again, now empty: a seal made again is a break of its own.
  const sealer = (await db.as('sealer')).sql;
  expect((await sealLog(sealer, KEY)).seals.map((s) => [s.sealNo, s.events])).toEqual([[2, 0]]);
  const remade = await verifyLog(sealer, { key: KEY });
  expect(kinds(remade)).toEqual(['seal_remade:2']);
  expect(remade.breaks[0]!.reason).toContain('seal 2 was made again: seals up to 2 had been made before it');
  expect(kinds(await verifyLog(sealer, { key: KEY, anchor }))).toEqual([
    'anchor_mismatch:2',
    'seal_remade:2',
  ]);

  await db.sql`
    insert into audit_prune_checkpoint (seal_no, last_seq, mac, totals, pruned_before, removed, signature)
    values (1, 0, 'x', '{}', now(), 0, 'forged')`;
  expect((await verifyLog(db.sql, { key: KEY })).breaks.map((b) => b.kind)).toContain('checkpoint_invalid');
});

it('prunes whole seals, leaving a signed checkpoint from which verify continues; the sealer loop elects one sealer', async () => {
  await appendAs('dev-knowledge', 6);
  await sealLog(db.sql, KEY);
  const cut = new Date(Date.now() + 1);
  await new Promise((r) => setTimeout(r, 20));
  await appendAs('dev-knowledge', 3);
  const a = startSealer(db.sql, KEY, { intervalMs: 20 });
  const b = startSealer(db.sql, KEY, { intervalMs: 20 });
  await a.sealNow();
  await b.sealNow();
  await Promise.all([a.stop(), b.stop()]);
  const seals = await db.sql<
    { seal_no: string; events: number }[]
  >`select seal_no, events from audit_seals order by seal_no`;
  // One chain: seal numbers without gaps or doubles, whoever sealed.
  expect(seals.map((s) => Number(s.seal_no))).toEqual(seals.map((_, i) => i + 1));
  expect(seals.reduce((n, s) => n + s.events, 0)).toBe(9);

  const pruned = await pruneLog(db.sql, cut, KEY);
  expect(pruned).toEqual({ removedEvents: 6, removedSeals: 1, checkpointSeal: 1 });
  const report = await verifyLog(db.sql, { key: KEY });
  expect(report.ok).toBe(true);
  expect(report.checkpoint?.sealNo).toBe(1);
  expect(report.servers).toEqual([{ server: 'dev-knowledge', sealed: 3, present: 3 }]);
});

it('the sealer’s own role takes the lease, seals and verifies with no advisory lock; a held lease keeps a second sealer out until it expires', async () => {
  const sealer = (await db.as('sealer')).sql;
  await expect(sealer`select pg_try_advisory_lock(1)`).rejects.toThrow(/permission denied/);
  await appendAs('customer', 3);
  const first = await sealLog(sealer, KEY);
  expect([first.elected, first.seals.map((s) => s.events)]).toEqual([true, [3]]);
  // A sealer that died holding the lease: nobody else seals until it expires.
  expect(await takeLease(sealer, 'crashed', 300)).toBe(true);
  await appendAs('customer', 2);
  expect(await sealLog(sealer, KEY)).toEqual({ elected: false, seals: [] });
  let pass = await sealLog(sealer, KEY);
  for (let i = 0; !pass.elected && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    pass = await sealLog(sealer, KEY);
  }
  expect(pass.seals.map((s) => s.events)).toEqual([2]);
  // A one-shot sealer gives the lease back; a server role may not touch it.
  expect(await takeLease(sealer, 'next', LEASE_MS)).toBe(true);
  const server = (await db.as('customer')).sql;
  await expect(takeLease(server, 'server')).rejects.toThrow(/permission denied/);
  await expect(
    server.begin((tx) => tx`lock table audit_sealer_lease in access exclusive mode`),
  ).rejects.toThrow(/permission denied/);
  const report = await verifyLog(sealer, { key: KEY });
  expect([report.ok, report.servers]).toEqual([true, [{ server: 'customer', sealed: 5, present: 5 }]]);
});

/** An open transaction on its own connection, with its transaction id taken; `end()` rolls it back. */
async function openTransaction(sql: Sql): Promise<{ end(): Promise<void> }> {
  const conn = await sql.reserve();
  await conn`begin`;
  await conn`select pg_current_xact_id()`;
  return {
    async end() {
      await conn`rollback`;
      conn.release();
    },
  };
}

it('transactions left open by another role, or outside Bulkhead, do not hold sealing up', async () => {
  const sealer = (await db.as('sealer')).sql;
  const open = [await openTransaction((await db.as('customer')).sql), await openTransaction(db.admin)];
  try {
    await appendAs('dev-knowledge', 5);
    // Long enough that only not waiting for them at all passes.
    const pass = await sealLog(sealer, KEY, { waitMs: 25_000 });
    expect(pass.seals.map((s) => [s.events, s.openRanges])).toEqual([[5, null]]);
    await appendAs('dev-knowledge', 2);
    const running = startSealer(sealer, KEY, { intervalMs: 20, settleMs: 60_000 });
    try {
      const sealed = await Promise.race([
        running.sealNow().then(() => 'sealed'),
        new Promise((r) => setTimeout(() => r('still waiting'), 15_000)),
      ]);
      expect(sealed).toBe('sealed');
    } finally {
      await running.stop();
    }
    expect((await verifyLog(sealer, { key: KEY })).servers).toEqual([
      { server: 'dev-knowledge', sealed: 7, present: 7 },
    ]);
  } finally {
    for (const t of open) await t.end();
  }
});

it('a writer that keeps its transaction open is sealed around after the wait, and its events once it commits; an event slipped into the range left open is named', async () => {
  const sealer = (await db.as('sealer')).sql;
  const slow = await (await db.as('customer')).sql.reserve();
  // A server role may not read the log: the number it was given, from the sequence.
  const insert = async (id: string) => {
    await slow`insert into audit_events (server, method, outcome, duration_ms, request_id)
      values ('customer', 'tools/call', 'ok', 1, ${id})`;
    return slow<{ seq: string }[]>`select currval('audit_events_seq') as seq`;
  };
  await slow`begin`;
  // One number the writer takes and rolls back, one it keeps: both are open until it ends.
  await slow`savepoint s`;
  const [dropped] = await insert('rolled-back');
  await slow`rollback to savepoint s`;
  const [kept] = await insert('slow');
  await appendAs('dev-knowledge', 3);
  const first = await sealLog(sealer, KEY, { waitMs: 200 });
  const openRange = [Number(dropped!.seq), Number(kept!.seq)];
  expect(first.seals.map((s) => [s.sealNo, s.events, s.openRanges, s.pending])).toEqual([
    [1, 3, [openRange], [1]],
  ]);
  expect((await verifyLog(sealer, { key: KEY })).ok).toBe(true);
  // Later seals do not wait for the same writer again.
  await appendAs('dev-knowledge', 1);
  expect((await sealLog(sealer, KEY, { waitMs: 25_000 })).seals.map((s) => [s.events, s.pending])).toEqual([
    [1, [1]],
  ]);
  await slow`commit`;
  slow.release();
  const waiting = await verifyLog(sealer, { key: KEY });
  expect([waiting.ok, waiting.unsealed.count]).toEqual([true, 1]);
  const closing = await sealLog(sealer, KEY);
  expect(closing.seals.map((s) => [s.sealNo, s.seqs, s.pending, s.openRanges])).toEqual([
    [3, [Number(kept!.seq)], [], null],
  ]);
  const report = await verifyLog(sealer, { key: KEY });
  expect([report.ok, report.unsealed.count, report.servers]).toEqual([
    true,
    0,
    [
      { server: 'customer', sealed: 1, present: 1 },
      { server: 'dev-knowledge', sealed: 4, present: 4 },
    ],
  ]);
  // The number that was rolled back stays empty: an event put there afterwards was never sealed.
  await asOwnerWithoutTriggers(
    (sql) => sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (${dropped!.seq}, gen_random_uuid(), now(), 'customer', 'bulkhead_owner', 'tools/call', 'ok', 0, 'forged')`,
  );
  expect(kinds(await verifyLog(sealer, { key: KEY }))).toEqual([`event_unsealed:${dropped!.seq}`]);
});

it('verify names approvals that ran without their decision event, also as the sealer, and breaks on an overdue unsealed tail', async () => {
  const sealer = (await db.as('sealer')).sql;
  const approval = (id: string, decisionEvent: string | null) => db.sql`
    insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
      expires_at, request_id, status, decided_at, decided_by, decided_by_token_id, decided_arguments_hash,
      executed_at, decision_event_id)
    values (${id}, 'admin', 'issue_credit_note', '{}', '{}', ${'d'.repeat(64)}, 'p', now() + interval '1 hour', 'r',
      'executed', now(), 'console:x', 'tok_x', ${'d'.repeat(64)}, now(), ${decisionEvent})`;
  const [decision] = await db.sql<{ id: string }[]>`
    insert into audit_events (server, method, outcome, duration_ms, request_id, approval_id, token_id)
    values ('console', 'approvals/decide', 'approved', 0, 'd', 'ap_decidedaaaaa', 'tok_x') returning id`;
  await approval('ap_decidedaaaaa', decision!.id);
  await approval('ap_undecidedaaa', null);
  await sealLog(sealer, KEY);
  const report = await verifyLog(sealer, { key: KEY });
  expect(report.breaks.map((b) => [b.kind, b.server])).toEqual([['approval_undecided', 'admin']]);
  expect(report.breaks[0]!.reason).toBe(
    'approval ap_undecidedaaa (admin) is executed, decided by console:x, but its approved decision event is missing from the log',
  );
  // A decision event named but absent (deleted) is a break as well.
  await db.sql`alter table bulkhead_approvals disable trigger user`;
  await db.sql`update bulkhead_approvals set decision_event_id = gen_random_uuid() where id = 'ap_decidedaaaaa'`;
  await db.sql`alter table bulkhead_approvals enable trigger user`;
  expect((await verifyLog(sealer, { key: KEY })).breaks.map((b) => b.reason.split(' ')[1])).toEqual([
    'ap_decidedaaaaa',
    'ap_undecidedaaa',
  ]);

  await appendAs('customer', 1);
  expect((await verifyLog(sealer, { key: KEY })).warnings).toEqual([]);
  const late = await verifyLog(sealer, { key: KEY, unsealedLimitMs: 0 });
  expect(late.warnings.map((w) => w.kind)).toEqual(['unsealed_overdue']);
  expect(late.warnings[0]!.reason).toContain('is the sealer running?');
  // A sealer that stalled is a break too (issue 42): the log after it is open to change.
  expect(late.ok).toBe(false);
  expect(late.breaks.map((b) => b.kind)).toEqual([
    'approval_undecided',
    'approval_undecided',
    'sealer_stalled',
  ]);
});
