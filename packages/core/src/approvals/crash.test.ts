import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailCatcher, type MailCatcher } from './mail-catcher.ts';
import { issueTestToken, testApprover } from '../testing/index.ts';
import { FIXTURE_EFFECTS_DDL, fixtureServer } from '../testing/fixtures/gated-server.ts';
import { getApproval } from './index.ts';

const MAIN = fileURLToPath(new URL('../testing/fixtures/gated-server-main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

interface Proc {
  child: ChildProcess;
  url: URL;
  lines: Record<string, unknown>[];
  exited: Promise<void>;
}

let db: TestDatabase;
let fixtureUrl: string;
let token: string;
let catcher: MailCatcher;
const running = new Set<Proc>();

beforeAll(async () => {
  db = await createTestDatabase();
  fixtureUrl = (await db.as('gate-fixture')).url;
  await db.sql.unsafe(FIXTURE_EFFECTS_DDL);
  token = await issueTestToken(db.sql, fixtureServer, { label: 'crash test client' });
  catcher = await startMailCatcher();
});
afterAll(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  await Promise.all([...running].map((p) => p.exited));
  await db.drop();
  await catcher.close();
});

async function freePort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Starts the fixture server as its own process (runServer: HTTP and the approval executor). */
async function start(): Promise<Proc> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: fixtureUrl,
      PORT: String(port),
      LOG_LEVEL: 'info',
      BULKHEAD_MIGRATE: 'false',
      BULKHEAD_SMTP_URL: catcher.url,
      BULKHEAD_MAIL_FROM: 'effects@bulkhead.test',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      lines.push({ msg: line });
    }
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const proc: Proc = {
    child,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    lines,
    exited: new Promise((resolve) => child.once('exit', () => resolve())),
  };
  running.add(proc);
  void proc.exited.then(() => running.delete(proc));
  const deadline = Date.now() + 20_000;
  while (!lines.some((l) => l.msg === 'gate-fixture listening')) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`fixture server did not start: ${stderr}`);
    await sleep(50);
  }
  return proc;
}

async function kill(p: Proc, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  p.child.kill(signal);
  await p.exited;
}

async function client(p: Proc): Promise<Client> {
  const c = new Client(
    { name: 'crash-test', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await c.connect(
    new StreamableHTTPClientTransport(p.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  return c;
}

async function request(c: Client, label: string, holdMs = 0): Promise<string> {
  const result = await c.callTool({ name: 'record_effect', arguments: { label, hold_ms: holdMs } });
  expect(result.isError).toBeFalsy();
  return (result.structuredContent as { approval_id: string }).approval_id;
}

const approve = async (id: string) => (await testApprover(db, 'crash-test')).decide(id, 'approve');

async function effects(id: string): Promise<{ pid: number }[]> {
  return db.sql<{ pid: number }[]>`select pid from fixture_effects where approval_id = ${id}`;
}

/** Waits until the approval has `status` (no deadline of its own: a status never reached times the test out). */
async function waitFor(id: string, status: string) {
  let a = await getApproval(db.sql, id);
  // The status and its audit event commit together.
  while (a?.status !== status) {
    await sleep(50);
    a = await getApproval(db.sql, id);
  }
  return a;
}

async function story(id: string): Promise<string[]> {
  const rows = await db.sql<
    { outcome: string }[]
  >`select outcome from audit_events where approval_id = ${id} order by seq`;
  return rows.map((r) => r.outcome);
}

describe('a server process killed with SIGKILL', () => {
  let survivor: Proc;

  it('runs an approval given while it was down, once, at its next start', async () => {
    const first = await start();
    const c = await client(first);
    const id = await request(c, 'approved while down');
    await c.close();
    await kill(first);
    await approve(id);
    await sleep(300);
    expect((await getApproval(db.sql, id))!.status).toBe('approved');

    survivor = await start();
    const done = await waitFor(id, 'executed');
    expect(done!.status).toBe('executed');
    expect(done!.executedBy).toContain(`:${survivor.child.pid}:`);
    expect(await effects(id)).toEqual([{ pid: survivor.child.pid }]);
    expect(await story(id)).toEqual(['pending_approval', 'approved', 'executed']);
  });

  it('rolls back an action killed mid-way and runs it once after the restart', async () => {
    const c = await client(survivor);
    const id = await request(c, 'killed mid-way', 1500);
    await c.close();
    await approve(id);
    // Until the action says it holds its transaction (a line never written times the test out).
    while (
      !survivor.lines.some((l) => l.msg === 'effect written, holding the transaction' && l.approvalId === id)
    )
      await sleep(20);
    await kill(survivor);
    expect((await getApproval(db.sql, id))!.status).toBe('approved');
    expect(await effects(id)).toEqual([]);

    const restarted = await start();
    const done = await waitFor(id, 'executed');
    expect(done!.status).toBe('executed');
    expect(await effects(id)).toEqual([{ pid: restarted.child.pid }]);
    // The e-mail queued by the killed run was rolled back with it; the one of the second run is delivered once.
    const mails = () =>
      db.sql`select status from bulkhead_outbox where approval_id = ${id} and kind = 'email'`;
    while ((await mails()).some((m) => m.status !== 'delivered')) await sleep(50);
    expect((await mails()).map((m) => m.status)).toEqual(['delivered']);
    expect(catcher.mails.filter((m) => m.approvalId === id).map((m) => m.to)).toEqual([['ops@example.test']]);
    expect(await story(id)).toEqual(['pending_approval', 'approved', 'executed']);
    await kill(restarted, 'SIGTERM');
  });
});

describe('two server processes', () => {
  it('run each of 50 approvals exactly once between them', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const c = await client(a);
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push(await request(c, `round ${i}`, 10));
    await c.close();
    for (const id of ids) await approve(id);

    let left = ids.length;
    while (left > 0) {
      await sleep(100);
      const [row] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from bulkhead_approvals where id = any(${ids}) and status <> 'executed'`;
      left = row!.n;
    }
    expect(left).toBe(0);
    const perApproval = await db.sql<{ n: number }[]>`
      select count(*)::int as n from fixture_effects where approval_id = any(${ids}) group by approval_id`;
    expect(perApproval).toHaveLength(50);
    expect(perApproval.every((r) => r.n === 1)).toBe(true);
    const [events] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events where approval_id = any(${ids}) and outcome = 'executed'`;
    expect(events!.n).toBe(50);
    const byProcess = await db.sql<{ pid: number; n: number }[]>`
      select pid, count(*)::int as n from fixture_effects where approval_id = any(${ids}) group by pid order by pid`;
    expect(byProcess.map((r) => r.pid).sort()).toEqual([a.child.pid, b.child.pid].sort());
    await Promise.all([kill(a, 'SIGTERM'), kill(b, 'SIGTERM')]);
  });
});
