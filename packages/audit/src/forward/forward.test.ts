import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import type { AuditEvent } from '../events.ts';
import { leaseHolder } from '../lease.ts';
import { sealLog } from '../seal.ts';
import { createAuditWriter } from '../writer.ts';
import type { ForwardDestination } from './destination.ts';
import { forwardAll, forwardBatch } from './forwarder.ts';
import { ocsfFileDestination } from './ocsf-file.ts';
import { readForwardLag } from './position.ts';
import { octetFrame, syslogMessage } from './syslog.ts';
import { syslogDestination } from './syslog-tls.ts';

const KEY = 'f'.repeat(43);
let db: TestDatabase;
let dir: string;
/** The sealer's own login: the forwarder runs in its process, under its role. */
let sealer: Awaited<ReturnType<TestDatabase['as']>>['sql'];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-forward-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  db = await createTestDatabase();
  sealer = (await db.as('sealer')).sql;
  return () => db.drop();
});

async function append(n: number, from = 0): Promise<void> {
  const audit = createAuditWriter((await db.as('dev-knowledge')).sql);
  for (let i = from; i < from + n; i++)
    await audit.append({
      server: 'dev-knowledge',
      method: 'tools/call',
      tool: 'search_docs',
      outcome: 'ok',
      requestId: `r-${i}`,
      durationMs: i,
      arguments: { query: `q ${i}` },
    });
}

/** A destination that keeps what it acknowledged, and fails the deliveries numbered in `failing`. */
function recorder(failing: number[] = []): ForwardDestination & { got: number[][]; tries: number } {
  const d = {
    name: 'test:recorder',
    got: [] as number[][],
    tries: 0,
    deliver(events: readonly AuditEvent[]) {
      d.tries++;
      if (failing.includes(d.tries)) return Promise.reject(new Error('receiver gone'));
      d.got.push(events.map((e) => e.seq));
      return Promise.resolve();
    },
  };
  return d;
}

const sealedOrder = async () =>
  (
    await db.sql<{ seq: string }[]>`
      select e.seq::text as seq from audit_seals, unnest(seqs) with ordinality as e(seq, i) order by seal_no, i`
  ).map((r) => Number(r.seq));

it('forwards sealed events only, in sealed order, and a failed batch again from the durable position', async () => {
  await append(7);
  const dest = recorder([2]);
  // Nothing sealed yet: nothing to send, and the destination is known with all of its lag.
  expect((await forwardAll(sealer, dest)).forwarded).toBe(0);
  await sealLog(db.sql, KEY);
  await append(3, 7);
  expect(await readForwardLag(sealer)).toEqual([
    { destination: 'test:recorder', lag: 7, oldestAt: expect.any(Date) },
  ]);
  const holder = leaseHolder();
  expect(await forwardBatch(sealer, dest, holder, 4)).toMatchObject({ held: true, forwarded: 4, more: true });
  expect((await readForwardLag(sealer))[0]!.lag).toBe(3);
  await expect(forwardBatch(sealer, dest, holder, 4)).rejects.toThrow('receiver gone');
  // Unacknowledged: the position stayed, and the next pass sends the same events again.
  expect((await readForwardLag(sealer))[0]!.lag).toBe(3);
  expect(await forwardBatch(sealer, dest, holder, 4)).toMatchObject({ forwarded: 3, more: false });
  await sealLog(db.sql, KEY);
  expect((await readForwardLag(sealer))[0]!.lag).toBe(3);
  expect(await forwardBatch(sealer, dest, holder, 4)).toMatchObject({ forwarded: 3, more: false });
  expect(dest.got.flat()).toEqual(await sealedOrder());
  expect(dest.got.flat()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(await readForwardLag(sealer)).toEqual([{ destination: 'test:recorder', lag: 0, oldestAt: null }]);
  // One forwarder moves a destination at a time: another one is told so and does nothing.
  expect(await forwardBatch(sealer, dest, leaseHolder(), 4)).toEqual({
    held: false,
    forwarded: 0,
    missing: [],
    more: false,
  });
});

it('sends an event sealed late (its writer still running at the first seal) after the seal it waited for', async () => {
  const writer = (await db.as('dev-knowledge')).sql;
  const audit = createAuditWriter(writer);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let begun!: () => void;
  const numbered = new Promise<void>((r) => (begun = r));
  const slow = writer.begin(async (tx) => {
    await audit.appendIn(tx, {
      server: 'dev-knowledge',
      method: 'tools/call',
      outcome: 'ok',
      requestId: 'slow',
      durationMs: 1,
    });
    begun();
    await held;
  });
  await numbered;
  await append(2);
  await sealLog(db.sql, KEY, { waitMs: 0 });
  release();
  await slow;
  await sealLog(db.sql, KEY);
  const dest = recorder();
  await forwardAll(sealer, dest);
  expect(dest.got.flat()).toEqual([2, 3, 1]);
  expect(dest.got.flat()).toEqual(await sealedOrder());
});

it('frames RFC 5424 messages by octet count, the body an OCSF event, and appends OCSF lines whole', async () => {
  await append(1);
  await db.sql`insert into audit_events (server, method, outcome, request_id, duration_ms, client_name, tool)
    values ('dev-knowledge', 'tools/call', 'forbidden', 'r-ü', 3, 'Zürich-Client', 'get_doc')`;
  await sealLog(db.sql, KEY);
  const file = join(dir, 'ocsf.jsonl');
  await writeFile(file, '{"cut short');
  await forwardAll(sealer, ocsfFileDestination(file, 'host-1'));
  const lines = (await readFile(file, 'utf8')).split('\n');
  expect(lines[0]).toBe('{"cut short');
  type Ocsf = {
    class_uid: number;
    type_uid: number;
    metadata: { sequence: number };
    status_code: string;
    severity_id: number;
    actor: unknown;
    api: unknown;
  };
  const events = lines.slice(1, -1).map((l) => JSON.parse(l) as Ocsf);
  expect(
    events.map((e) => [e.class_uid, e.type_uid, e.metadata.sequence, e.status_code, e.severity_id]),
  ).toEqual([
    [6003, 600399, 1, 'ok', 1],
    [6003, 600399, 2, 'forbidden', 3],
  ]);
  expect(events[1]!.actor).toEqual({ app_name: 'Zürich-Client' });
  expect(events[1]!.api).toEqual({
    operation: 'get_doc',
    service: { name: 'dev-knowledge' },
    request: { uid: 'r-ü' },
  });

  const [, second] = await db.sql<AuditEvent[]>`
    select seq::int, id, at, server, method, outcome, request_id as "requestId", duration_ms as "durationMs",
      client_name as "clientName", client_version as "clientVersion", tool, token_id as "tokenId",
      token_label as "tokenLabel", injection_suspected as "injectionSuspected", trace_id as "traceId"
    from audit_events order by seq`;
  const message = syslogMessage(second!, 'host 1');
  // facility 13 (log audit) × 8 + severity 4 (warning) for a refusal
  expect(message).toMatch(/^<108>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z host1 bulkhead - audit - \uFEFF\{/);
  expect(JSON.parse(message.split('\uFEFF')[1]!)).toMatchObject({
    class_uid: 6003,
    status_code: 'forbidden',
  });
  const frame = octetFrame(message);
  const length = Number(frame.toString('latin1').split(' ')[0]);
  expect(length).toBe(Buffer.byteLength(message));
  expect(frame.length).toBe(String(length).length + 1 + length);
});

it('counts a syslog batch acknowledged only when the receiver closes after reading it to its end', async () => {
  const run = promisify(execFile);
  const at = (f: string) => join(dir, f);
  await run('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2'],
    ...[
      '-keyout',
      at('key.pem'),
      '-out',
      at('cert.pem'),
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
  ]);
  const [key, cert] = await Promise.all([readFile(at('key.pem')), readFile(at('cert.pem'))]);
  // Large enough (20 × 60 KB) that a receiver cannot have read it all in its first read.
  const audit = createAuditWriter((await db.as('dev-knowledge')).sql);
  const big = Object.fromEntries(['a', 'b', 'c', 'd'].map((k) => [k, k.repeat(15_000)]));
  for (let i = 0; i < 20; i++)
    await audit.append({
      server: 'dev-knowledge',
      method: 'tools/call',
      outcome: 'ok',
      requestId: `big-${i}`,
      durationMs: 1,
      arguments: big,
    });
  await sealLog(db.sql, KEY);
  let mode: 'read' | 'reset' = 'reset';
  const received: Buffer[] = [];
  const server = createServer({ key, cert }, (socket: TLSSocket) => {
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      // A receiver that dies mid-batch: it read a part, then the connection goes with the rest unread.
      if (mode === 'reset') socket.destroy();
    });
    socket.on('end', () => socket.end());
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const dest = syslogDestination({ url: `tls://127.0.0.1:${port}`, ca: cert, hostname: 'h' });
  expect(dest.name).toBe(`syslog:tls://127.0.0.1:${port}`);
  await expect(forwardAll(sealer, dest)).rejects.toThrow(`127.0.0.1:${port}`);
  expect((await readForwardLag(sealer))[0]!.lag).toBe(20);
  mode = 'read';
  received.length = 0;
  expect(await forwardAll(sealer, dest)).toEqual({ held: true, forwarded: 20 });
  let rest = Buffer.concat(received);
  const requests: string[] = [];
  while (rest.length) {
    const space = rest.indexOf(0x20);
    const length = Number(rest.subarray(0, space).toString('ascii'));
    const message = rest.subarray(space + 1, space + 1 + length).toString('utf8');
    expect(message).toMatch(/^<110>1 /);
    requests.push(
      (JSON.parse(message.split('\uFEFF')[1]!) as { api: { request: { uid: string } } }).api.request.uid,
    );
    rest = rest.subarray(space + 1 + length);
  }
  expect(requests).toEqual(Array.from({ length: 20 }, (_, i) => `big-${i}`));
  expect((await readForwardLag(sealer))[0]!.lag).toBe(0);
  // A receiver whose certificate does not chain to the given CA is refused before anything is sent.
  const other = syslogDestination({ url: `tls://127.0.0.1:${port}`, hostname: 'h' });
  await append(1, 3);
  await sealLog(db.sql, KEY);
  await expect(forwardAll(sealer, other)).rejects.toThrow(/certificate/);
  await new Promise((r) => server.close(r));
});
