import { generateKeyPairSync, sign } from 'node:crypto';
import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterEach, beforeEach, expect, it } from 'vitest';
import {
  checkpointBytes,
  checkpointPublicKey,
  checkpointSigner,
  keyFingerprint,
  readCheckpoints,
} from './checkpoint.ts';
import { verifyExport, writeCheckpointedExport } from './checkpoint-export.ts';
import { pruneLog } from './prune.ts';
import { sealLog } from './seal.ts';
import { verifyLogWithPublicKey } from './verify-public.ts';
import { createAuditWriter } from './writer.ts';

const KEY = 'k'.repeat(43);
const pair = () => generateKeyPairSync('ed25519');
const keys = pair();
const signer = checkpointSigner(keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
const publicKey = checkpointPublicKey(keys.publicKey.export({ type: 'spki', format: 'pem' }) as string);
let db: TestDatabase;

beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

async function appendAs(server: string, n: number): Promise<void> {
  const audit = createAuditWriter((await db.as(server)).sql);
  await Promise.all(
    Array.from({ length: n }, (_, i) =>
      audit.append({
        server,
        method: 'tools/call',
        tool: 'search_docs',
        outcome: 'ok',
        requestId: `${server}-${i}`,
        durationMs: i,
        arguments: { query: `query ${i}` },
      }),
    ),
  );
}

/** What an owner could do: with the append-only triggers out of the way. */
async function asOwnerWithoutTriggers(work: (sql: Sql) => Promise<unknown>): Promise<void> {
  await db.sql.begin(async (tx) => {
    for (const table of ['audit_events', 'audit_seals', 'audit_signed_checkpoints'])
      await tx`alter table ${tx(table)} disable trigger user`;
    await work(tx as unknown as Sql);
    for (const table of ['audit_events', 'audit_seals', 'audit_signed_checkpoints'])
      await tx`alter table ${tx(table)} enable trigger user`;
  });
}

const verify = (sql: Sql = db.sql) => verifyLogWithPublicKey(sql, { publicKey });
const kinds = (r: Awaited<ReturnType<typeof verify>>) =>
  r.breaks.map((b) => `${b.kind}:${b.seq ?? b.sealNo}`);
const seqsOf = async (server?: string) =>
  (
    await db.sql<{ seq: string }[]>`
      select seq from audit_events ${server ? db.sql`where server = ${server}` : db.sql``} order by seq`
  ).map((r) => Number(r.seq));

it('signs each seal as a checkpoint, which verifies with the public key alone; checkpoints are append-only', async () => {
  await appendAs('dev-knowledge', 6);
  await sealLog(db.sql, KEY, { signer });
  await appendAs('customer', 3);
  await sealLog((await db.as('sealer')).sql, KEY, { signer });
  await appendAs('customer', 2);
  const all = await seqsOf();
  const report = await verify((await db.as('sealer')).sql);
  expect(report.breaks).toEqual([]);
  expect(report.ok).toBe(true);
  expect(report.seals).toBe(2);
  expect(report.sealedThrough).toBe(all[8]);
  expect(report.servers).toEqual([
    { server: 'customer', sealed: 3, present: 3 },
    { server: 'dev-knowledge', sealed: 6, present: 6 },
  ]);
  expect(report.unsealed.count).toBe(2);
  expect(report.coverage).toEqual({
    checkpoints: 2,
    firstSeal: 1,
    lastSeal: 2,
    from: all[0],
    through: all[8],
    gaps: [],
    keyId: keyFingerprint(keys.publicKey),
    timestamped: null,
  });
  const [first] = await readCheckpoints(db.sql, 0, 1);
  expect(first!.keyId).toBe(signer.keyId);
  expect(first!.prevSealNo).toBeNull();
  for (const change of [
    db.sql`update audit_signed_checkpoints set signature = 'x'`,
    db.sql`delete from audit_signed_checkpoints`,
    db.sql`truncate audit_signed_checkpoints`,
  ])
    await expect(change).rejects.toThrow(/append-only/);
  const sealer = (await db.as('sealer')).sql;
  await expect(sealer`delete from audit_signed_checkpoints`).rejects.toThrow();
  await expect(sealer`update audit_signed_checkpoints set key_id = 'x'`).rejects.toThrow();
  await expect(
    (await db.as('customer'))
      .sql`insert into audit_signed_checkpoints select * from audit_signed_checkpoints`,
  ).rejects.toThrow(/permission denied/);
});

it('names a changed event, deleted events, a whole server deleted and two swapped, without the HMAC key', async () => {
  await appendAs('dev-knowledge', 8);
  await appendAs('customer', 4);
  await sealLog(db.sql, KEY, { signer });
  const dev = await seqsOf('dev-knowledge');
  const customer = await seqsOf('customer');
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`update audit_events set arguments = '{"query":"harmless"}' where seq = ${dev[4]!}`;
    await sql`delete from audit_events where server = 'customer'`;
    await sql`update audit_events set seq = -1 where seq = ${dev[0]!}`;
    await sql`update audit_events set seq = ${dev[0]!} where seq = ${dev[1]!}`;
    await sql`update audit_events set seq = ${dev[1]!} where seq = -1`;
  });
  const report = await verify();
  expect(report.ok).toBe(false);
  expect(kinds(report).sort()).toEqual(
    [
      `event_changed:${dev[0]}`,
      `event_changed:${dev[1]}`,
      `event_changed:${dev[4]}`,
      ...customer.map((s) => `event_missing:${s}`),
    ].sort(),
  );
  expect(report.breaks.find((b) => b.seq === dev[4])!.reason).toContain('differs from what the checkpoint');
  expect(report.servers).toEqual([
    { server: 'customer', sealed: 4, present: 0 },
    { server: 'dev-knowledge', sealed: 8, present: 8 },
  ]);
});

it('names an event inserted into a covered range or before the first number, one under another server, and seals deleted from the end', async () => {
  await appendAs('dev-knowledge', 3);
  const [gap] = await db.sql<{ seq: string }[]>`select nextval('audit_events_seq') as seq`;
  await appendAs('dev-knowledge', 2);
  await asOwnerWithoutTriggers(
    (sql) => sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (nextval('audit_events_seq'), gen_random_uuid(), now(), 'console', 'bulkhead_dev_knowledge_login',
        'approvals/decide', 'approved', 0, 'forged')`,
  );
  await sealLog(db.sql, KEY, { signer });
  await appendAs('dev-knowledge', 1);
  await sealLog(db.sql, KEY, { signer });
  const forged = (await seqsOf('console'))[0]!;
  expect(kinds(await verify())).toEqual([`server_mismatch:${forged}`]);
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`
      insert into audit_events (seq, id, at, server, db_role, method, outcome, duration_ms, request_id)
      values (${gap!.seq}, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'late'),
        (0, gen_random_uuid(), now(), 'dev-knowledge', 'postgres', 'tools/call', 'ok', 0, 'before')`;
    await sql`delete from audit_seals where seal_no = 2`;
    await sql`delete from audit_signed_checkpoints where seal_no = 2`;
  });
  const report = await verify();
  expect(kinds(report).sort()).toEqual(
    [
      `event_unsealed:${gap!.seq}`,
      'event_in_pruned_range:0',
      'seal_missing:2',
      `server_mismatch:${forged}`,
    ].sort(),
  );
});

it('a checkpoint re-signed with another key, or deleted from the middle of the chain, is a break', async () => {
  for (let i = 0; i < 3; i++) {
    await appendAs('dev-knowledge', 2);
    await sealLog(db.sql, KEY, { signer });
  }
  const other = pair();
  const forger = checkpointSigner(other.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  const [c] = await readCheckpoints(db.sql, 0, 1);
  // Under its own name, and under the real key's name: either way not the key the verifier trusts.
  const { signature: _, ...body } = c!;
  const asForger = { ...body, keyId: forger.keyId };
  await asOwnerWithoutTriggers(async (sql) => {
    await sql`update audit_signed_checkpoints set key_id = ${forger.keyId},
      signature = ${sign(null, checkpointBytes(asForger), forger.privateKey).toString('base64')} where seal_no = 1`;
    await sql`update audit_signed_checkpoints set
      signature = ${sign(null, checkpointBytes(body), forger.privateKey).toString('base64')} where seal_no = 2`;
  });
  const report = await verify();
  // Seal 2 chains to the checkpoint of seal 1 as the real key signed it, not as the forger changed it.
  expect(kinds(report)).toEqual(['checkpoint_signature:1', 'checkpoint_signature:2', 'checkpoint_chain:2']);
  expect(report.breaks[0]!.reason).toContain('signed by another key');
  expect(report.breaks[1]!.reason).toContain('does not match its signature');

  await asOwnerWithoutTriggers((sql) => sql`delete from audit_signed_checkpoints where seal_no <= 2`);
  expect(kinds(await verify())).toEqual(['checkpoint_chain:3']);
});

it('exports events with their checkpoints; the file verifies offline, and a changed or dropped event is a break', async () => {
  await appendAs('dev-knowledge', 4);
  await sealLog(db.sql, KEY, { signer });
  await appendAs('customer', 3);
  await sealLog(db.sql, KEY, { signer });
  await appendAs('customer', 1);
  const chunks: string[] = [];
  const written = await writeCheckpointedExport(db.sql, { since: new Date(Date.now() - 3_600_000) }, (c) => {
    chunks.push(c);
    return Promise.resolve();
  });
  expect(written).toEqual({ events: 8, checkpoints: 2 });
  const text = chunks.join('');
  const report = await verifyExport(text, publicKey);
  expect(report.breaks).toEqual([]);
  expect(report.ok).toBe(true);
  expect(report.seals).toBe(2);
  expect(report.unsealed.count).toBe(1);
  expect(report.servers).toEqual([
    { server: 'customer', sealed: 3, present: 3 },
    { server: 'dev-knowledge', sealed: 4, present: 4 },
  ]);

  const lines = text.trimEnd().split('\n');
  const events = lines.filter((l) => l.startsWith('{"event"'));
  const changed = text.replace(
    events[1]!,
    events[1]!.replace('query 1', 'query 9').replace('query 0', 'query 9'),
  );
  const seq = (JSON.parse(events[1]!) as { event: { seq: number } }).event.seq;
  expect(kinds(await verifyExport(changed, publicKey))).toEqual([`event_changed:${seq}`]);
  const dropped = text.replace(`${events[1]!}\n`, '');
  expect(kinds(await verifyExport(dropped, publicKey))).toEqual([`event_missing:${seq}`]);
  const otherKey = checkpointPublicKey(pair().publicKey.export({ type: 'spki', format: 'pem' }) as string);
  expect(kinds(await verifyExport(text, otherKey))).toEqual([
    'checkpoint_signature:1',
    'checkpoint_signature:2',
  ]);
});

it('prunes checkpoints with their seals: what remains verifies from the prune checkpoint on', async () => {
  await appendAs('dev-knowledge', 3);
  await sealLog(db.sql, KEY, { signer });
  await appendAs('dev-knowledge', 2);
  await sealLog(db.sql, KEY, { signer });
  const [second] = await db.sql<{ at: Date }[]>`select sealed_at as at from audit_seals where seal_no = 2`;
  await pruneLog(db.sql, second!.at, KEY);
  const report = await verify();
  expect(report.breaks).toEqual([]);
  expect(report.coverage).toMatchObject({ checkpoints: 1, firstSeal: 2, lastSeal: 2 });
  expect(report.servers).toEqual([{ server: 'dev-knowledge', sealed: 2, present: 2 }]);
});
