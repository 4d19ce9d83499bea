import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  connectTestClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type TestServer,
} from '../testing/index.ts';
import { upstreamFixtureServer } from '../testing/fixtures/upstream-server.ts';
import { matchesExactly, upstreamEffect } from './upstream-effect.ts';

const MAIN = fileURLToPath(new URL('../testing/fixtures/upstream-dispatcher-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const CREDENTIAL = 'alerts-api-token-5b1d0c2e9f';
const LEASE_MS = 1000;

/**
 * The alerting system: `/silences` honours Idempotency-Key (a repeat gets the first answer and makes
 * no second silence); `/plain/silences` does not, but lets a caller look a silence up by its key;
 * `/keyless/silences` knows no key at all (as Alertmanager): GET lists every silence with its comment.
 * `refuseNext` makes the next POST answer 503 without making the effect. `hold` makes the next POST answer its status and head, then wait: the test kills the dispatcher
 * in that gap, after the upstream answered and before the outbox row could be marked.
 */
interface Received {
  method: string;
  path: string;
  key: string | undefined;
  authorization: string | undefined;
}
const received: Received[] = [];
const effects: { alert: string; key: string | undefined; comment?: string }[] = [];
const byKey = new Map<string, string>();
let hold: ((res: ServerResponse) => void) | null = null;
let refuseNext = false;
const upstream = createHttpServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const key = req.headers['idempotency-key'] as string | undefined;
    received.push({ method: req.method!, path: req.url!, key, authorization: req.headers.authorization });
    const lookup = req.url!.match(/^\/plain\/silences\/by-key\/(.+)$/);
    if (req.method === 'GET' && lookup) {
      const found = byKey.get(decodeURIComponent(lookup[1]!));
      return found ? res.writeHead(200).end(found) : res.writeHead(404).end();
    }
    if (req.method === 'GET' && req.url === '/keyless/silences')
      return res.writeHead(200).end(JSON.stringify(effects.filter((e) => e.comment !== undefined)));
    if (req.method !== 'POST') return res.writeHead(404).end();
    if (refuseNext) {
      refuseNext = false;
      return res.writeHead(503).end();
    }
    const honours = req.url === '/silences';
    if (honours && key && byKey.has(key)) return res.writeHead(201).end(byKey.get(key));
    const { alert, comment } = JSON.parse(body) as { alert: string; comment?: string };
    effects.push({ alert, key, ...(comment !== undefined ? { comment } : {}) });
    const answer = JSON.stringify({ silence: effects.length, alert });
    if (key) byKey.set(key, answer);
    if (hold) {
      const h = hold;
      hold = null;
      res.writeHead(201, { 'content-type': 'application/json' });
      res.write(answer.slice(0, 5));
      return h(res);
    }
    res.writeHead(201).end(answer);
  });
});

let db: TestDatabase;
let fixtureUrl: string;
let server: TestServer;
let token: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  db = await createTestDatabase();
  fixtureUrl = (await db.as('upstream-fixture')).url;
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  server = await startTestServer(upstreamFixtureServer, { db });
  token = await issueTestToken(db.sql, upstreamFixtureServer, { label: 'exactly-once test' });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await server.close();
  upstream.closeAllConnections();
  await new Promise((r) => upstream.close(r));
  await db.drop();
});

/** Starts the dispatcher as a process of its own and waits until it is ready. */
async function startDispatcher(): Promise<{ child: ChildProcess; exited: Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: fixtureUrl,
      ALERTS_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      ALERTS_TOKEN: CREDENTIAL,
      DELIVERY_LEASE_MS: String(LEASE_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => children.delete(child));
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const ready = new Promise<void>((resolve) =>
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"dispatcher ready"')) resolve();
    }),
  );
  await Promise.race([
    ready,
    exited.then(() => {
      throw new Error(`dispatcher exited: ${stderr}`);
    }),
  ]);
  return { child, exited };
}

/** Requests the gated call and has it approved; returns the approval id. */
type Mode = { check?: boolean; keyless?: boolean };

async function approvedSilence(alert: string, mode: Mode): Promise<string> {
  const client = await connectTestClient(server.url, token);
  const result = await client.callTool({ name: 'silence_alert', arguments: { alert, ...mode } });
  await client.close();
  const id = (result.structuredContent as { approval_id: string }).approval_id;
  await (await testApprover(db)).decide(id, 'approve');
  return id;
}

async function outboxRow(approvalId: string) {
  for (let i = 0; i < 400; i++) {
    const [row] = await db.sql<{ id: string; key: string; status: string; attempts: number }[]>`
      select id, idempotency_key as key, status, attempts from bulkhead_outbox where approval_id = ${approvalId}`;
    if (row?.status === 'delivered') return row;
    await sleep(50);
  }
  throw new Error('the outbox row was never delivered');
}

/**
 * The dispatcher is killed (SIGKILL) after the upstream made the effect and answered, before it could
 * mark the row; a new dispatcher takes the row once the lease lapses and delivers it again.
 */
async function killBetweenAnswerAndMark(alert: string, mode: Mode) {
  let answered!: (res: ServerResponse) => void;
  const held = new Promise<ServerResponse>((resolve) => (answered = resolve));
  hold = answered;
  const first = await startDispatcher();
  const id = await approvedSilence(alert, mode);
  const res = await held;
  first.child.kill('SIGKILL');
  await first.exited;
  res.end();
  const second = await startDispatcher();
  const row = await outboxRow(id);
  second.child.kill('SIGTERM');
  await second.exited;
  return { id, row };
}

it('an effect on an upstream that honours Idempotency-Key is made once across a SIGKILL between its answer and the marking', async () => {
  const before = received.length;
  const { row } = await killBetweenAnswerAndMark('A-7', {});
  const sent = received.slice(before);
  expect(sent.map((r) => [r.method, r.path])).toEqual([
    ['POST', '/silences'],
    ['POST', '/silences'],
  ]);
  expect(sent[0]!.key).toBe(row.key);
  expect(row.key).toMatch(/^bulkhead-outbox-[0-9a-f]{32}$/);
  expect(sent[1]!.key).toBe(sent[0]!.key);
  expect(sent[0]!.authorization).toBe(`Bearer ${CREDENTIAL}`);
  expect(effects.filter((e) => e.alert === 'A-7')).toHaveLength(1);
  expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
  // The killed attempt left no record; the second one is recorded as delivered.
  const attempts = await db.sql<{ attempt: number; ok: boolean; status_code: number }[]>`
    select attempt, ok, status_code from bulkhead_outbox_attempts where outbox_id = ${row.id} order by attempt`;
  expect(attempts).toEqual([{ attempt: 2, ok: true, status_code: 201 }]);
});

it('for an upstream without idempotency, the deliverer checks before the retry and does not send again', async () => {
  const before = received.length;
  const { row } = await killBetweenAnswerAndMark('A-8', { check: true });
  const sent = received.slice(before);
  const key = row.key;
  expect(sent.map((r) => [r.method, r.path])).toEqual([
    ['POST', '/plain/silences'],
    ['GET', `/plain/silences/by-key/${key}`],
  ]);
  expect(effects.filter((e) => e.alert === 'A-8')).toHaveLength(1);
  expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
});

it('for an upstream that knows no key, the key travels in the body and the check finds it there', async () => {
  const before = received.length;
  const { row } = await killBetweenAnswerAndMark('A-9', { keyless: true });
  const sent = received.slice(before);
  const key = row.key;
  expect(sent.map((r) => [r.method, r.path])).toEqual([
    ['POST', '/keyless/silences'],
    ['GET', '/keyless/silences'],
  ]);
  expect(effects.filter((e) => e.alert === 'A-9')).toEqual([
    { alert: 'A-9', key, comment: `silence of A-9 [${key}]` },
  ]);
  expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
});

it('when the check does not find the key in the answer, the deliverer sends again', async () => {
  const before = received.length;
  refuseNext = true;
  const dispatcher = await startDispatcher();
  const id = await approvedSilence('A-10', { keyless: true });
  const row = await outboxRow(id);
  dispatcher.child.kill('SIGTERM');
  await dispatcher.exited;
  const key = row.key;
  expect(received.slice(before).map((r) => [r.method, r.path])).toEqual([
    ['POST', '/keyless/silences'],
    ['GET', '/keyless/silences'],
    ['POST', '/keyless/silences'],
  ]);
  expect(effects.filter((e) => e.alert === 'A-10')).toEqual([
    { alert: 'A-10', key, comment: `silence of A-10 [${key}]` },
  ]);
  expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
});

it('no audit event and no outbox row carries the credential', async () => {
  const [row] = await db.sql<{ hits: number }[]>`
    select (select count(*) from audit_events e where row_to_json(e)::text like ${`%${CREDENTIAL}%`})::int
      + (select count(*) from bulkhead_outbox o where row_to_json(o)::text like ${`%${CREDENTIAL}%`})::int as hits`;
  expect(row!.hits).toBe(0);
});

it('an effect keeps its query for the client: a list stays a list (its key repeated when sent), undefined is left out', () => {
  const effect = upstreamEffect({
    upstream: 'alerts',
    method: 'DELETE',
    path: '/silences',
    query: { label: ['team=db', 'severity=page'], state: undefined, force: true },
  });
  expect(JSON.parse(JSON.stringify(effect))).toEqual({
    upstream: 'alerts',
    method: 'DELETE',
    path: '/silences',
    query: { label: ['team=db', 'severity=page'], force: true },
  });
  expect(() =>
    upstreamEffect({ upstream: 'alerts', method: 'POST', path: '/x', query: { deep: { a: 1 } as never } }),
  ).toThrow();
});

it('a check matches exactly: every field named, lists in any order but whole, nothing found in a text', () => {
  const made = {
    id: 'x',
    comment: 'Disks [bulkhead-outbox-0f]',
    createdBy: 'Ana (via bulkhead)',
    matchers: [
      { name: 'alertname', value: 'DiskFull', isRegex: false, isEqual: true },
      { name: 'instance', value: 'db-1', isRegex: false, isEqual: true },
    ],
    status: { state: 'active' },
  };
  const wrote = { comment: made.comment, createdBy: made.createdBy, matchers: [...made.matchers].reverse() };
  expect(matchesExactly(made, wrote)).toBe(true);
  expect(matchesExactly(made, { ...wrote, comment: 'Disks' })).toBe(false);
  expect(matchesExactly({ ...made, comment: `${made.comment} [bulkhead-outbox-1]` }, wrote)).toBe(false);
  expect(matchesExactly(made, { ...wrote, createdBy: 'Mallory (via bulkhead)' })).toBe(false);
  expect(matchesExactly(made, { ...wrote, matchers: made.matchers.slice(0, 1) })).toBe(false);
  expect(matchesExactly({ ...made, matchers: made.matchers.slice(0, 1) }, wrote)).toBe(false);
  expect(matchesExactly({ ...made, createdBy: undefined }, wrote)).toBe(false);
  expect(matchesExactly([made], wrote)).toBe(false);
  expect(matchesExactly(made, { status: { state: 'expired' } })).toBe(false);
  expect(matchesExactly(made, { status: { state: 'active' } })).toBe(true);
});

it('an effect that already carries an outbox key is refused when it is queued', () => {
  expect(() =>
    upstreamEffect({
      upstream: 'alerts',
      method: 'POST',
      path: '/silences',
      json: { comment: 'routine [Bulkhead-Outbox-3f2a]' },
    }),
  ).toThrow(
    'the effect on alerts carries a text with "bulkhead-outbox-", which only Bulkhead\'s delivery writes; nothing was done',
  );
});
