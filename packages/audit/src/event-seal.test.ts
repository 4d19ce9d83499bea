import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { eventSealStatus } from './event-seal.ts';
import { sealLog } from './seal.ts';
import { createAuditWriter } from './writer.ts';

const KEY = 'k'.repeat(43);
let db: TestDatabase;

beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

async function append(server: string, n: number): Promise<number[]> {
  const audit = createAuditWriter((await db.as(server)).sql);
  const ids: string[] = [];
  for (let i = 0; i < n; i++)
    ids.push(
      (
        await audit.append({
          server,
          method: 'tools/call',
          tool: 'search_docs',
          outcome: 'ok',
          requestId: `${server}-${i}`,
          durationMs: i,
          arguments: { query: `query ${i}` },
        })
      ).id,
    );
  const rows = await db.sql<{ seq: string }[]>`
    select seq from audit_events where id = any (${ids}::uuid[]) order by seq`;
  return rows.map((r) => Number(r.seq));
}

/** The event's status read with `key` (null: none). */
const status = (seq: number, key: string | null = KEY, sql: Sql = db.sql) =>
  sql.begin((tx) => eventSealStatus(tx, key ?? undefined, seq));

/** Tampering needs the owner, with the append-only triggers out of the way: what an owner could do. */
async function withoutTriggers(work: (sql: Sql) => Promise<unknown>): Promise<void> {
  await db.sql.begin(async (tx) => {
    await tx`alter table audit_events disable trigger user`;
    await tx`alter table audit_seals disable trigger user`;
    await work(tx as unknown as Sql);
    await tx`alter table audit_events enable trigger user`;
    await tx`alter table audit_seals enable trigger user`;
  });
}

it('tells an unsealed event from a sealed one, verifies it with the key, and names a changed event, a changed or deleted seal and an event slipped in afterwards', async () => {
  const [first, second] = await append('dev-knowledge', 2);
  // A number taken and never used: a transaction that rolled back leaves such gaps.
  const [gap] = await db.sql<{ seq: string }[]>`select nextval('audit_events_seq') as seq`;
  const [third] = await append('dev-knowledge', 1);
  expect(await status(first!)).toEqual({ state: 'unsealed' });
  expect(await status(third! + 100)).toBeUndefined();

  const [seal] = (await sealLog(db.sql, KEY)).seals;
  const sealed = { state: 'sealed', sealNo: 1, sealedAt: seal!.sealedAt };
  expect(await status(first!)).toEqual({ ...sealed, check: 'verified' });
  expect(await status(third!)).toEqual({ ...sealed, check: 'verified' });
  expect(await status(first!, null)).toEqual({ ...sealed, check: 'no_key' });
  expect(await status(first!, 'another key entirely, not the sealer’s')).toEqual({
    ...sealed,
    check: 'seal_changed',
  });

  await withoutTriggers(async (sql) => {
    await sql`update audit_events set arguments = '{"query":"harmless"}' where seq = ${second!}`;
    await sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (${gap!.seq}, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'late'),
        (0, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'before')`;
  });
  expect(await status(second!)).toEqual({ ...sealed, check: 'event_changed' });
  expect(await status(first!)).toEqual({ ...sealed, check: 'verified' });
  expect(await status(Number(gap!.seq))).toEqual({ state: 'inserted_afterwards', sealNo: 1 });
  expect(await status(0)).toEqual({ state: 'in_pruned_range' });

  await withoutTriggers((sql) => sql`update audit_seals set sealed_at = sealed_at + interval '1 s'`);
  expect(await status(first!)).toEqual({
    ...sealed,
    sealedAt: new Date(seal!.sealedAt.getTime() + 1000),
    check: 'seal_changed',
  });
  const [fourth] = await append('dev-knowledge', 1);
  await sealLog(db.sql, KEY);
  await withoutTriggers((sql) => sql`delete from audit_seals where seal_no = 1`);
  expect(await status(first!)).toEqual({ state: 'seal_missing' });
  expect(await status(fourth!)).toMatchObject({ state: 'sealed', sealNo: 2, check: 'verified' });
});

it('an event of a writer still running when its range was sealed is unsealed until the seal that closes the range', async () => {
  const sealer = (await db.as('sealer')).sql;
  const slow = await (await db.as('customer')).sql.reserve();
  await slow`begin`;
  await slow`insert into audit_events (server, method, outcome, duration_ms, request_id)
    values ('customer', 'tools/call', 'ok', 1, 'slow')`;
  const [kept] = await slow<{ seq: string }[]>`select currval('audit_events_seq') as seq`;
  const seq = Number(kept!.seq);
  const [after] = await append('dev-knowledge', 1);
  expect((await sealLog(sealer, KEY, { waitMs: 200 })).seals.map((s) => s.openRanges)).toEqual([
    [[seq, seq]],
  ]);
  expect(await status(after!, KEY, sealer)).toMatchObject({ state: 'sealed', sealNo: 1, check: 'verified' });
  await slow`commit`;
  slow.release();
  expect(await status(seq, KEY, sealer)).toEqual({ state: 'unsealed' });
  const [closing] = (await sealLog(sealer, KEY)).seals;
  expect(closing!.seqs).toEqual([seq]);
  expect(await status(seq, KEY, sealer)).toEqual({
    state: 'sealed',
    sealNo: closing!.sealNo,
    sealedAt: closing!.sealedAt,
    check: 'verified',
  });
});
