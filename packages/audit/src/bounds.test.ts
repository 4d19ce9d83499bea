import { createHash } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Sql } from '@bulkhead/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventSealStatus } from './event-seal.ts';
import { FIELD_LIMITS, jsonbTextBytes, MAX_JSON_BYTES, MAX_ROW_BYTES, normaliseEvent } from './normalise.ts';
import { sealLog, sealMac, type Seal } from './seal.ts';
import { DIGESTED_ABOVE_BYTES, eventDigest, readBodies } from './sealed-body.ts';
import { verifyLog } from './verify.ts';
import { createAuditWriter } from './writer.ts';

/**
 * Issue 42, item 6: audit rows are bounded in the database, the sealer never stalls on a row, and a
 * stalled sealer is a break. Everything is tried under a server's own login, as a leaked
 * `DATABASE_URL` or an SQL injection would.
 */
const KEY = 'b'.repeat(43);
let db: TestDatabase;
let admin: Sql;
let sealer: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = (await db.as('admin')).sql;
  sealer = (await db.as('sealer', { kind: 'sealer' })).sql;
}, 60_000);
afterAll(async () => {
  await db?.drop();
});

/** What the database answered an insert of one event with these columns, run as `sql`. */
async function insert(sql: Sql, columns: Record<string, unknown>): Promise<string> {
  const row = { method: 'tools/call', outcome: 'ok', duration_ms: 1, request_id: 'r', ...columns };
  try {
    await sql.begin(async (tx) => {
      await tx`insert into audit_events ${tx(row as never)}`;
      throw new Error('rolled back');
    });
    return 'ok';
  } catch (err) {
    const e = err as Error & { constraint_name?: string };
    return e.message === 'rolled back' ? 'ok' : `${e.message} [${e.constraint_name ?? ''}]`;
  }
}

const refused = (constraint: string) =>
  `new row for relation "audit_events" violates check constraint "${constraint}" [${constraint}]`;

it('refuses, under a server’s own login, a text field, a jsonb field and a whole row just above their caps', async () => {
  // Each text column: the writer's limit is the database's, in characters.
  for (const [column, limit] of [
    ['tool', FIELD_LIMITS.tool],
    ['method', FIELD_LIMITS.method],
    ['client_name', FIELD_LIMITS.clientName],
    ['client_version', FIELD_LIMITS.clientVersion],
    ['request_id', FIELD_LIMITS.requestId],
    ['token_id', FIELD_LIMITS.tokenId],
    ['token_label', FIELD_LIMITS.tokenLabel],
    ['approval_id', FIELD_LIMITS.approvalId],
  ] as const) {
    expect([column, await insert(admin, { [column]: 'é'.repeat(limit) })]).toEqual([column, 'ok']);
    expect([column, await insert(admin, { [column]: 'é'.repeat(limit + 1) })]).toEqual([
      column,
      refused(`audit_events_${column}_bounded`),
    ]);
  }
  expect(await insert(admin, { outcome: 'x'.repeat(41) })).toBe(refused('audit_events_outcome_bounded'));
  // The 268 MB field of the issue, just above the cap: the text form of the jsonb, in bytes.
  const json = (bytes: number) => ({ s: 'x'.repeat(bytes - 9) }); // {"s": "…"} adds 9 bytes
  expect(jsonbTextBytes(json(MAX_JSON_BYTES))).toBe(MAX_JSON_BYTES);
  expect(await insert(admin, { arguments: json(MAX_JSON_BYTES) })).toBe('ok');
  expect(await insert(admin, { arguments: json(MAX_JSON_BYTES + 1) })).toBe(
    refused('audit_events_arguments_bounded'),
  );
  expect(await insert(admin, { result_summary: json(MAX_JSON_BYTES + 1) })).toBe(
    refused('audit_events_result_summary_bounded'),
  );
  // Two fields each within its cap, too large together.
  const half = json(MAX_ROW_BYTES / 2);
  expect(await insert(admin, { arguments: half, result_summary: json(MAX_ROW_BYTES / 2 - 2_000) })).toBe(
    'ok',
  );
  expect(await insert(admin, { arguments: half, result_summary: half })).toBe(
    refused('audit_events_row_bounded'),
  );
  // The owner is bound as well.
  expect(await insert(db.sql, { server: 'admin', arguments: json(MAX_JSON_BYTES + 1) })).toBe(
    refused('audit_events_arguments_bounded'),
  );
});

it('measures the text form of JSON exactly as PostgreSQL renders it, so that the writer never makes a row the database refuses', async () => {
  const values: unknown[] = [
    { a: 1, b: [1, 2, 3], c: { d: null, e: true, f: false } },
    [1e21, -1.5e-7, 5e-324, 1.7976931348623157e308, 123.456, -0, 1e-7, 12345678901234567000],
    { 'ke"y': 'tab\there\u0001\u001f\u007f "quoted" \\ back', emoji: '😀', euro: '€'.repeat(10) },
    [],
    {},
    'plain',
    [[[]], [{}]],
  ];
  const rendered = await db.sql<{ n: number }[]>`
    select octet_length(v::text) as n from jsonb_array_elements(${db.sql.json(values as never)}::jsonb) v`;
  expect(values.map(jsonbTextBytes)).toEqual(rendered.map((r) => r.n));
  // Arguments within 64 Ki characters that render larger than 256 KiB, and a row too large in sum: stored
  // as their size and hash, accepted under the server's login.
  const audit = createAuditWriter(admin);
  const numbers = await audit.append({
    server: 'admin',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'numbers',
    durationMs: 1,
    arguments: { n: Array.from({ length: 6_000 }, () => 1e300) },
  });
  expect(numbers.arguments).toMatchObject({ _bulkhead_truncated: true, keys: ['n'] });
  // 56,000 characters, 168,000 bytes: each within its caps, the two too large for one row.
  const wide = (key: string) => ({ [key]: Array.from({ length: 4 }, () => '€'.repeat(14_000)) });
  const both = await audit.append({
    server: 'admin',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'both',
    durationMs: 1,
    arguments: wide('a'),
    resultSummary: { ...wide('r'), more: 'x' },
  });
  expect(jsonbTextBytes(wide('a'))).toBeLessThan(MAX_JSON_BYTES);
  expect(both.arguments).toEqual(wide('a'));
  expect(both.resultSummary).toMatchObject({ _bulkhead_truncated: true, keys: ['r', 'more'] });
  // Of two the same size, the arguments give way.
  const even = normaliseEvent({
    server: 'admin',
    method: 'tools/call',
    outcome: 'ok',
    requestId: 'even',
    durationMs: 1,
    arguments: wide('a'),
    resultSummary: wide('b'),
  });
  expect([even.arguments, even.resultSummary]).toEqual([
    {
      _bulkhead_truncated: true,
      chars: JSON.stringify(wide('a')).length,
      sha256: expect.any(String),
      keys: ['a'],
    },
    wide('b'),
  ]);
});

it('accepts and seals a 60 KB event written under a server’s login, and verify holds', async () => {
  const audit = createAuditWriter(admin);
  const args = { text: Array.from({ length: 4 }, (_, i) => String(i).repeat(15_000)) };
  const event = await audit.append({
    server: 'admin',
    method: 'tools/call',
    tool: 'issue_credit_note',
    outcome: 'ok',
    requestId: 'sixty',
    durationMs: 1,
    arguments: args,
  });
  expect(event.arguments).toEqual(args);
  const [stored] = await db.sql<{ seq: string; n: number }[]>`
    select seq, octet_length(arguments::text) as n from audit_events where id = ${event.id}`;
  expect(stored!.n).toBe(60_026); // {"text": ["000…", "111…", "222…", "333…"]}
  const pass = await sealLog(sealer, KEY, { waitMs: 0 });
  expect(pass.seals.some((s) => s.seqs.includes(Number(stored!.seq)))).toBe(true);
  expect(pass.seals.every((s) => s.bodyFormat === 2)).toBe(true);
  const report = await verifyLog(sealer, { key: KEY });
  expect([report.ok, report.breaks, report.unsealed.count]).toEqual([true, [], 0]);
});

/**
 * Runs `work` as the owner with the caps on the jsonb columns lifted, and puts them back as they were
 * (not valid): the only way to hold a row such as every database written before 0048 may hold.
 */
async function withoutCaps(work: (tx: Sql) => Promise<unknown>): Promise<void> {
  await db.sql.begin(async (tx) => {
    const caps = await tx<{ name: string; def: string }[]>`
      select conname as name, pg_get_constraintdef(oid) as def from pg_constraint
      where conrelid = 'audit_events'::regclass
        and conname in ('audit_events_arguments_bounded', 'audit_events_row_bounded')`;
    for (const c of caps) await tx.unsafe(`alter table audit_events drop constraint ${c.name}`);
    await work(tx as unknown as Sql);
    for (const c of caps) await tx.unsafe(`alter table audit_events add constraint ${c.name} ${c.def}`);
  });
}

it('seals a row written before the caps by a digest of its stored text, and a seal made before keeps verifying', async () => {
  const big = 'y'.repeat(DIGESTED_ABOVE_BYTES + 1);
  const legacy = (id: string) => (tx: Sql) =>
    tx`insert into audit_events (server, method, outcome, duration_ms, request_id, arguments)
      values ('admin', 'tools/call', 'ok', 1, ${id}, ${tx.json({ big })})`;
  const seqOf = async (id: string) =>
    Number((await db.sql<{ seq: string }[]>`select seq from audit_events where request_id = ${id}`)[0]!.seq);

  // A seal made before 0048 (format 1, no body_format) over an oversized row keeps verifying.
  const prev = (await verifyLog(sealer, { key: KEY })).sealedThrough;
  await withoutCaps(legacy('legacy-a'));
  const a = await seqOf('legacy-a');
  const [head] = await db.sql<{ n: string; mac: string; totals: Record<string, number> }[]>`
    select seal_no as n, mac, totals from audit_seals order by seal_no desc limit 1`;
  const bodies = await db.sql.begin((tx) => readBodies(tx, prev, a, 10_000, 1));
  expect(bodies.map((b) => b.seq)).toEqual([a]);
  const [made] = await db.sql<{ n: string }[]>`select last_value as n from audit_seals_made`;
  const body: Omit<Seal, 'mac'> = {
    sealNo: Number(head!.n) + 1,
    sealedAt: new Date(),
    firstSeq: prev + 1,
    lastSeq: a,
    events: 1,
    seqs: [a],
    digests: eventDigest(KEY, bodies[0]!.body),
    counts: { admin: 1 },
    totals: { ...head!.totals, admin: (head!.totals.admin ?? 0) + 1 },
    prevMac: head!.mac,
    openRanges: null,
    waitingFor: null,
    pending: [],
    madeBefore: Number(made!.n),
    bodyFormat: null,
  };
  const old = { ...body, mac: sealMac(KEY, body) };
  await sealer`
    insert into audit_seals (seal_no, sealed_at, first_seq, last_seq, events, seqs, digests, counts, totals,
      prev_mac, mac, pending, made_before)
    values (${old.sealNo}, ${old.sealedAt}, ${old.firstSeq}, ${old.lastSeq}, ${old.events},
      ${old.seqs.map(String)}::text[]::bigint[], ${old.digests}, ${sealer.json(old.counts)}, ${sealer.json(old.totals)},
      ${old.prevMac}, ${old.mac}, '{}', ${old.madeBefore})`;
  await sealer`select setval('audit_seals_made', ${old.sealNo})`;

  // The next oversized row is sealed in format 2: by the SHA-256 and size of its stored text.
  await withoutCaps(legacy('legacy-b'));
  const b = await seqOf('legacy-b');
  const [format1, format2] = await db.sql.begin(async (tx) => [
    (await readBodies(tx, b - 1, b, 1, 1))[0]!.body,
    (await readBodies(tx, b - 1, b, 1, 2))[0]!.body,
  ]);
  expect(format1.length).toBeGreaterThan(DIGESTED_ABOVE_BYTES);
  expect(format2.length).toBeLessThan(1_000);
  const text = JSON.stringify({ big }).replace(':', ': ');
  expect(JSON.parse(format2).arguments).toEqual({
    bytes: Buffer.byteLength(text),
    sha256: createHash('sha256').update(text).digest('hex'),
  });
  const pass = await sealLog(sealer, KEY, { waitMs: 0 });
  expect(pass.seals.map((s) => [s.bodyFormat, s.seqs])).toEqual([[2, [b]]]);
  const report = await verifyLog(sealer, { key: KEY });
  expect([report.ok, report.breaks, report.unsealed.count]).toEqual([true, [], 0]);
  const checks = () =>
    sealer.begin(async (tx) =>
      Promise.all([a, b].map(async (seq) => (await eventSealStatus(tx, KEY, seq)) as { check: string })),
    );
  expect((await checks()).map((c) => c.check)).toEqual(['verified', 'verified']);

  // The digest is sealed, not a placeholder: either row changed is caught.
  await withoutCaps(async (tx) => {
    await tx`alter table audit_events disable trigger user`;
    await tx`update audit_events set arguments = ${tx.json({ big: `${big.slice(1)}z` })} where seq in (${a}, ${b})`;
    await tx`alter table audit_events enable trigger user`;
  });
  expect((await verifyLog(sealer, { key: KEY })).breaks.map((e) => [e.kind, e.seq])).toEqual([
    ['event_changed', a],
    ['event_changed', b],
  ]);
  expect((await checks()).map((c) => c.check)).toEqual(['event_changed', 'event_changed']);
});

it('verify reports a stalled sealer as a break: an event unsealed longer than the limit', async () => {
  const fresh = await createTestDatabase();
  try {
    const server = (await fresh.as('admin')).sql;
    const sealing = (await fresh.as('sealer', { kind: 'sealer' })).sql;
    await createAuditWriter(server).append({
      server: 'admin',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'waits',
      durationMs: 1,
    });
    const [event] = await fresh.sql<{ at: Date }[]>`select at from audit_events`;
    // Within the limit: the unsealed tail, as before.
    const now = await verifyLog(sealing, { key: KEY });
    expect([now.ok, now.breaks, now.unsealed.count]).toEqual([true, [], 1]);
    // The sealer has not sealed it for longer than the limit: verify fails, and says why.
    const late = await verifyLog(sealing, {
      key: KEY,
      unsealedLimitMs: Date.now() - event!.at.getTime() - 1,
    });
    expect(late.ok).toBe(false);
    expect(late.breaks.map((b) => b.kind)).toEqual(['sealer_stalled']);
    expect(late.breaks[0]!.reason).toMatch(
      /^the oldest unsealed event is from .*, more than \d+ s ago: the sealer is stopped or fails on every round \(see its log\)$/,
    );
    await sealLog(sealing, KEY, { waitMs: 0 });
    expect((await verifyLog(sealing, { key: KEY, unsealedLimitMs: 0 })).ok).toBe(true);
  } finally {
    await fresh.drop();
  }
});
