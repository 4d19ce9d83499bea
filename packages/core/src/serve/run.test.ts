import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHUTDOWN_GRACE_MS } from './run.ts';
import { issueToken } from './tokens.ts';

// A server process stopped with SIGTERM while a call is in flight: it stops accepting, answers the
// call, writes its audit event, and exits 0.
const fixture = fileURLToPath(new URL('../testing/fixtures/sleepy-server.ts', import.meta.url));
const root = fileURLToPath(new URL('../../../../', import.meta.url));

let db: TestDatabase;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  ({ token } = await issueToken(db.sql, {
    server: 'sleepy',
    label: 'shutdown test',
    scopes: ['sleep:read'],
    customerId: null,
    expiresAt: new Date(Date.now() + 3600_000),
    createdBy: 'test',
    owner: null,
  }));
});
afterAll(async () => {
  await db.drop();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function start(): Promise<{
  child: ChildProcess;
  url: string;
  output: () => string;
  exit: Promise<number | null>;
}> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      PORT: String(port),
      BULKHEAD_MIGRATE: 'false',
      // A fixture is no deployable with a role of its own: it runs as the owner, which it must be told it may.
      BULKHEAD_ALLOW_OWNER_ROLE: 'true',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited early: ${output}`);
    const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error(`the server did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, url: `http://127.0.0.1:${port}/mcp`, output: () => output, exit };
}

function call(url: string, requestId: string, seconds: number) {
  return fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'x-request-id': requestId,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'sleep_in_database', arguments: { seconds } },
    }),
  });
}

async function sleeping(): Promise<boolean> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and state = 'active' and query like '%pg_sleep%' and pid <> pg_backend_pid()`;
  return row!.n > 0;
}

describe('SIGTERM', () => {
  it('stops accepting, lets the call in flight finish, writes its event and exits 0', async () => {
    const server = await start();
    let answered = false;
    // Answered once the whole body is in (fetch resolves at the headers, which may come first).
    const inFlight = call(server.url, 'in-flight-at-sigterm', 3)
      .then(async (r) => ({ status: r.status, text: await r.text() }))
      .finally(() => (answered = true));
    while (!(await sleeping())) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGTERM');
    // New connections are turned away while the call in flight is still running (the order of events).
    while (
      await fetch(server.url.replace('/mcp', '/healthz')).then(
        () => true,
        () => false,
      )
    )
      await new Promise((r) => setTimeout(r, 20));
    expect(answered).toBe(false);
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(response.text).toContain('"slept":3');
    expect(await server.exit).toBe(0);
    // It left because the call was answered, not because the grace ran out.
    expect(server.output()).not.toContain('stopping with requests still in flight');
    const events = await db.sql<{ outcome: string }[]>`
      select outcome from audit_events where request_id = 'in-flight-at-sigterm'`;
    expect(events.map((e) => e.outcome)).toEqual(['ok']);
  });

  it('waits for a call no longer than the 10 s grace, then exits 0 all the same', async () => {
    expect(SHUTDOWN_GRACE_MS).toBe(10_000);
    const server = await start();
    const inFlight = call(server.url, 'outlasts-the-grace', 25).catch((err: unknown) => err);
    while (!(await sleeping())) await new Promise((r) => setTimeout(r, 20));
    const signalled = Date.now();
    server.child.kill('SIGTERM');
    expect(await server.exit).toBe(0);
    // It waited for the grace (a slower machine only waits longer), then left with the call still
    // running, saying so: had it waited for the call (25 s), no request would be left in flight.
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(SHUTDOWN_GRACE_MS - 500);
    expect(server.output()).toContain('stopping with requests still in flight');
    await inFlight;
    // The call cut off at the end of the grace is recorded as cancelled before the process exits.
    const events = await db.sql<{ outcome: string }[]>`
      select outcome from audit_events where request_id = 'outlasts-the-grace'`;
    expect(events.map((e) => e.outcome)).toEqual(['cancelled']);
    expect(await sleeping()).toBe(false);
  }, 30_000);
});
