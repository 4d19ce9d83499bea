import { execFile } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
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

// Trusted time with a real time-stamping authority: OpenSSL's `ts -reply` behind a small HTTP handler
// on loopback, answering RFC 3161 requests as a TSA does.

const run = promisify(execFile);
const KEY = 'k'.repeat(43);
const keys = generateKeyPairSync('ed25519');
const signer = checkpointSigner(keys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
const publicKey = checkpointPublicKey(keys.publicKey.export({ type: 'spki', format: 'pem' }) as string);

interface Tsa {
  url: string;
  cert: X509Certificate;
  server: Server;
}

/** A TSA with its own self-signed certificate (extended key usage: timeStamping, as RFC 3161 requires). */
async function startTsa(dir: string, name: string): Promise<Tsa> {
  const at = (file: string) => join(dir, `${name}-${file}`);
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
    ...['-keyout', at('key.pem'), '-out', at('cert.pem'), '-days', '2', '-subj', `/CN=${name}`],
    ...['-addext', 'extendedKeyUsage=critical,timeStamping'],
  ]);
  await writeFile(at('serial'), '01\n');
  await writeFile(
    at('ts.cnf'),
    [
      '[ tsa ]',
      'default_tsa = tsa_config',
      '[ tsa_config ]',
      `serial = ${at('serial')}`,
      `signer_cert = ${at('cert.pem')}`,
      `signer_key = ${at('key.pem')}`,
      'signer_digest = sha256',
      'default_policy = 1.2.3.4.1',
      'digests = sha256',
      'ess_cert_id_alg = sha256',
      '',
    ].join('\n'),
  );
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = ++requests;
      void (async () => {
        await writeFile(at(`${n}.tsq`), Buffer.concat(chunks));
        await run('openssl', [
          'ts',
          '-reply',
          '-config',
          at('ts.cnf'),
          '-queryfile',
          at(`${n}.tsq`),
          '-out',
          at(`${n}.tsr`),
        ]);
        res
          .writeHead(200, { 'content-type': 'application/timestamp-reply' })
          .end(await readFile(at(`${n}.tsr`)));
      })().catch(() => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    cert: new X509Certificate(await readFile(at('cert.pem'))),
    server,
  };
}

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
  for (const t of [tsa, otherTsa]) await new Promise((resolve) => t.server.close(resolve));
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
