import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callFlat, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertmanager, type TestAlertmanager } from '../servers/ops/src/fixtures/alertmanager.ts';
import { opsServer } from '../servers/ops/src/server.ts';
import { createSilence } from '../servers/ops/src/tools/create-silence.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

// Issue 43: ten matchers of `[-\w]+|((.*)*)*é|Value with spaces` froze ops for 11 s, because the
// "silence everything" check ran the model's regex on V8's backtracking engine, synchronously, before
// anyone approved. One more level of nesting (used here) ran for minutes. Ops runs as its own process
// before a real Alertmanager, so a frozen ops cannot freeze this test: on the old code the calls below
// never answer and the test fails on its time-out. Now the check runs on RE2's engine: the call
// answers, and ops answers /healthz while the call is held in flight at Alertmanager's door.

/** The issue's pattern with one more nesting level: minutes on V8's engine for one label value. */
const PATHOLOGICAL = '[-\\w]+|(((.*)*)*)*é|Value with spaces';
const pathological = (n: number) =>
  Array.from({ length: n }, () => ({ label: 'alertname', op: '=~', value: PATHOLOGICAL }));

let db: TestDatabase;
let am: TestAlertmanager;
let ops: ServerProcess;
let client: Client;

/** Every step the test sees, in order: the proof that /healthz answered while a call was in flight. */
const events: string[] = [];
/** A loopback proxy before Alertmanager that holds the alert queries while `hold` is set. */
let hold: { arrived: () => void; release: Promise<void> } | undefined;
const proxy = createServer((req: IncomingMessage, res: ServerResponse) => {
  const forward = () => {
    const out = httpRequest(new URL(req.url!, am.url), { method: req.method, headers: req.headers }, (a) => {
      res.writeHead(a.statusCode!, a.headers);
      a.pipe(res);
    });
    out.on('error', () => req.socket.destroy());
    req.pipe(out);
  };
  if (hold && req.url!.startsWith('/api/v2/alerts')) {
    events.push('alert query held');
    const { arrived, release } = hold;
    hold = undefined;
    arrived();
    void release.then(forward);
  } else forward();
});

beforeAll(async () => {
  db = await createTestDatabase();
  am = await startAlertmanager();
  await am.postAlerts([{ labels: { alertname: 'DiskFull', severity: 'warning' } }]);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  ops = await spawnServer('ops', (await db.as('ops')).url, { BULKHEAD_OPS_ALERTMANAGER_URL: proxyUrl });
  client = await connectTestClient(ops.url, await issueTestToken(db.sql, opsServer), 'ops-regex');
}, 90_000);

afterAll(async () => {
  await client?.close();
  await ops?.stop();
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
  await am?.close();
  await db?.drop();
});

const healthz = async () => {
  const res = await fetch(new URL('/healthz', ops.url));
  return { status: res.status, body: (await res.json()) as unknown };
};

it('answers ten pathological matchers with the refusal, and /healthz alongside', async () => {
  const [call, health] = await Promise.all([
    callFlat(client, 'create_silence', {
      matchers: pathological(10),
      duration: '1h',
      comment: 'Quiet please',
    }),
    healthz(),
  ]);
  expect(call.isError).toBe(true);
  expect(call.text).toMatch(/^alertname matches the regex .* would match every alert: add a matcher/);
  expect(health).toEqual({ status: 200, body: { status: 'ok', server: 'ops' } });
}, 30_000);

it("answers the issue's own ten matchers (11 s on V8) within the tool's time limit, /healthz answering fast all the while", async () => {
  // Exactly what froze ops for 11.1 s, /healthz taking 11.09 s: on V8 both limits below are missed.
  const matchers = Array.from({ length: 10 }, () => ({
    label: 'alertname',
    op: '=~',
    value: '[-\\w]+|((.*)*)*é|Value with spaces',
  }));
  const started = performance.now();
  let answeredAfter: number | undefined;
  const call = callFlat(client, 'create_silence', { matchers, duration: '1h', comment: 'Quiet please' }).then(
    (r) => {
      answeredAfter = performance.now() - started;
      return r;
    },
  );
  // Probed until the call has answered, so that a probe waits on ops while the check runs.
  const probes: number[] = [];
  do {
    const sent = performance.now();
    expect(await healthz()).toEqual({ status: 200, body: { status: 'ok', server: 'ops' } });
    probes.push(performance.now() - sent);
  } while (answeredAfter === undefined);
  const result = await call;
  expect(result.text).toMatch(/^alertname matches the regex .* would match every alert: add a matcher/);
  // Within create_silence's own time limit (10 s); /healthz on a loaded machine answers well within 2 s.
  expect(answeredAfter).toBeLessThan(createSilence.timeoutMs!);
  expect(probes.filter((ms) => ms >= 2_000)).toEqual([]);
}, 30_000);

it('files a silence whose other matchers are pathological, /healthz answering while the call is in flight', async () => {
  events.length = 0;
  let release!: () => void;
  const held = new Promise<void>((arrived) => {
    hold = { arrived, release: new Promise<void>((r) => (release = r)) };
  });
  const call = callFlat(client, 'create_silence', {
    matchers: [...pathological(9), { label: 'alertname', op: '=', value: 'DiskFull' }],
    duration: '1h',
    comment: 'Disk work tonight',
  }).then((r) => {
    events.push('call answered');
    return r;
  });
  await held;
  const health = await healthz();
  events.push(`healthz answered ${health.status}`);
  release();
  const result = await call;
  expect(events).toEqual(['alert query held', 'healthz answered 200', 'call answered']);
  expect(result.isError, result.text).toBe(false);
  expect(result.structured).toMatchObject({ status: 'pending_approval' });
}, 30_000);

it('refuses a class that spans the printable range as "every alert", and RE2-invalid syntax by name', async () => {
  const broad = await callFlat(client, 'create_silence', {
    matchers: [{ label: 'alertname', op: '=~', value: '[ -~]+' }],
    duration: '1h',
    comment: 'Quiet please',
  });
  expect(broad.text).toBe(
    'alertname matches the regex "[ -~]+" would match every alert: add a matcher that names what to silence, ' +
      'e.g. {"label": "alertname", "op": "=", "value": "HighLatency"}; nothing was filed',
  );
  const lookahead = await callFlat(client, 'list_alerts', {
    matchers: [{ label: 'alertname', op: '=~', value: 'Disk(?=Full)' }],
  });
  expect(lookahead.text).toBe(
    'alertname matches the regex "Disk(?=Full)": not a valid RE2 regex: invalid or unsupported Perl syntax: `(?=` ' +
      '— fix the value or use op "=" for an exact value',
  );
  const deep = await callFlat(client, 'list_alerts', {
    matchers: [{ label: 'alertname', op: '=~', value: '((((((Disk))))))' }],
  });
  expect(deep.text).toBe(
    'alertname matches the regex "((((((Disk))))))": groups nested deeper than 5 — fix the value or use op "=" for an exact value',
  );
}, 30_000);
