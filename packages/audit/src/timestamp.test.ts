import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { startTsa, type Tsa } from './testing.ts';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import {
  checkpointHash,
  checkpointPublicKey,
  checkpointSigner,
  readCheckpoints,
  writeCheckpoint,
} from './checkpoint.ts';
import { verifyExport, writeCheckpointedExport } from './checkpoint-export.ts';
import { TIMESTAMP_LATE_MS, timestampCheckpoints } from './checkpoint-timestamps.ts';
import { sealLog } from './seal.ts';
import { requestTimestamp } from './timestamp.ts';
import { verifyLogWithPublicKey } from './verify-public.ts';
import { createAuditWriter } from './writer.ts';

// Trusted time with a real time-stamping authority on loopback (OpenSSL's `ts -reply`, see testing.ts).

const KEY = 'k'.repeat(43);
const keys = generateKeyPairSync('ed25519');
const signer = checkpointSigner(keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
const publicKey = checkpointPublicKey(keys.publicKey.export({ type: 'spki', format: 'pem' }) as string);

let dir: string;
let tsa: Tsa;
let otherTsa: Tsa;
let db: TestDatabase;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-tsa-'));
  tsa = await startTsa(dir, 'tsa');
  otherTsa = await startTsa(dir, 'other');
});
afterAll(async () => {
  for (const t of [tsa, otherTsa]) await t.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

async function appendAndSeal(n: number): Promise<void> {
  const audit = createAuditWriter((await db.as('customer')).sql);
  for (let i = 0; i < n; i++)
    await audit.append({
      server: 'customer',
      method: 'tools/call',
      tool: 'get_ticket',
      outcome: 'ok',
      requestId: `r-${i}`,
      durationMs: i,
    });
  await sealLog(db.sql, KEY, { signer });
}

const kinds = (r: { breaks: { kind: string; sealNo: number | null }[] }) =>
  r.breaks.map((b) => `${b.kind}:${b.sealNo}`);

it('timestamps checkpoints at a real TSA; verify checks them with its certificate, in the database and in an export', async () => {
  await appendAndSeal(3);
  await appendAndSeal(2);
  const sealer = (await db.as('sealer')).sql;
  expect(await timestampCheckpoints(sealer, tsa.url)).toBe(2);
  expect(await timestampCheckpoints(sealer, tsa.url)).toBe(0);
  const report = await verifyLogWithPublicKey(sealer, { publicKey, tsa: tsa.cert });
  expect(report.breaks).toEqual([]);
  expect(report.coverage).toMatchObject({ checkpoints: 2, timestamped: 2 });

  // Timestamped by another TSA than the one trusted: each is a break.
  const other = await verifyLogWithPublicKey(db.sql, { publicKey, tsa: otherTsa.cert });
  expect(kinds(other)).toEqual(['checkpoint_timestamp:1', 'checkpoint_timestamp:2']);
  expect(other.breaks[0]!.reason).toContain('not signed by the given TSA certificate');
  expect(other.coverage).toMatchObject({ timestamped: 0 });

  const chunks: string[] = [];
  await writeCheckpointedExport(db.sql, { since: new Date(Date.now() - 3_600_000) }, (c) => {
    chunks.push(c);
    return Promise.resolve();
  });
  const offline = await verifyExport(chunks.join(''), publicKey, tsa.cert);
  expect(offline.breaks).toEqual([]);
  expect(offline.coverage).toMatchObject({ checkpoints: 2, timestamped: 2 });
  expect(kinds(await verifyExport(chunks.join(''), publicKey, otherTsa.cert))).toEqual([
    'checkpoint_timestamp:1',
    'checkpoint_timestamp:2',
  ]);
});

it('a checkpoint timestamped long after the time it claims, or with the timestamp of another checkpoint, is a break', async () => {
  await appendAndSeal(2);
  // A checkpoint signed with the right key but claiming an earlier time than it was made: a backdated one.
  const claimed = new Date(Date.now() - TIMESTAMP_LATE_MS - 60_000);
  const [head] = await db.sql<{ n: string }[]>`select max(last_seq) as n from audit_seals`;
  await db.sql.begin((tx) =>
    writeCheckpoint(
      tx,
      {
        sealNo: 2,
        sealedAt: claimed,
        firstSeq: Number(head!.n) + 1,
        lastSeq: Number(head!.n),
        counts: {},
        openRanges: null,
        pending: [],
        bodyFormat: 2,
      },
      [],
      signer,
    ),
  );
  // The sealer asks for no timestamp that late; a forger with the signing key would.
  expect(await timestampCheckpoints(db.sql, tsa.url)).toBe(1);
  const [, second] = await readCheckpoints(db.sql, 0, 2);
  const token = await requestTimestamp(tsa.url, Buffer.from(checkpointHash(second!), 'hex'));
  await db.sql`insert into audit_checkpoint_timestamps (seal_no, token) values (2, ${token})`;
  const report = await verifyLogWithPublicKey(db.sql, { publicKey, tsa: tsa.cert });
  expect(kinds(report)).toEqual(['checkpoint_timestamp:2']);
  expect(report.breaks[0]!.reason).toContain('it may have been made later than it says');

  // The first checkpoint's token moved onto the second: it covers another checkpoint.
  await asOwnerWithoutTriggers(
    db.sql,
    (sql) =>
      sql`update audit_checkpoint_timestamps set token = (select token from audit_checkpoint_timestamps where seal_no = 1) where seal_no = 2`,
  );
  const moved = await verifyLogWithPublicKey(db.sql, { publicKey, tsa: tsa.cert });
  expect(kinds(moved)).toEqual(['checkpoint_timestamp:2']);
  expect(moved.breaks[0]!.reason).toContain('covers another checkpoint');
});

async function asOwnerWithoutTriggers(sql: Sql, work: (tx: Sql) => Promise<unknown>): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`alter table audit_checkpoint_timestamps disable trigger user`;
    await work(tx as unknown as Sql);
    await tx`alter table audit_checkpoint_timestamps enable trigger user`;
  });
}
