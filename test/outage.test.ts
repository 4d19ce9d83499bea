import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from 'node:net';
import { issueTestToken, testApprover } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';

// The admin server, as its own process, reaches Postgres through a TCP relay that the test takes
// away for 30 s under load and brings back: nothing crashes, calls fail with a clear answer instead of
// hanging, service returns, every request has exactly one audit event, and approvals go on. How fast
// calls fail and how soon service returns are printed, not asserted: they depend on the machine.
const OUTAGE_MS = 30_000;
/** Answers the outage must have given (each "unavailable") before it ends, and served calls after it. */
const DURING = 100;
const AFTER = 20;
const WORKERS = 4;
const PACE_MS = 40;

/** A TCP relay in front of the real database that can drop every connection and refuse new ones. */
class Relay {
  private server: TcpServer | undefined;
  private readonly sockets = new Set<Socket>();
  constructor(
    private readonly target: URL,
    readonly port: number,
  ) {}
  up(): Promise<void> {
    return new Promise((resolve, reject) => {
      const server = createTcpServer((inbound) => {
        const outbound = connect(Number(this.target.port || 5432), this.target.hostname);
        this.sockets.add(inbound).add(outbound);
        inbound.pipe(outbound).pipe(inbound);
        const drop = () => {
          inbound.destroy();
          outbound.destroy();
          this.sockets.delete(inbound);
          this.sockets.delete(outbound);
        };
        inbound.on('error', drop).on('close', drop);
        outbound.on('error', drop).on('close', drop);
      });
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
      this.server = server;
    });
  }
  async down(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }
}

let db: TestDatabase;
let relay: Relay;
let admin: ServerProcess;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const direct = new URL((await db.as('admin')).url);
  relay = new Relay(direct, await freePort());
  await relay.up();
  const relayed = new URL(direct);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(relay.port);
  admin = await spawnServer('admin', relayed.toString(), { BULKHEAD_RATE_LIMIT_PER_MINUTE: '100000' });
  token = await issueTestToken(db.sql, adminServer, { label: 'outage load' });
}, 60_000);
afterAll(async () => {
  await admin?.stop();
  await relay?.down();
  await db.drop();
});

interface Answer {
  id: string;
  sent: number;
  took: number;
  status: number;
  kind: 'ok' | 'unavailable' | 'other';
  text: string;
}

/** The JSON-RPC response in a plain JSON or event-stream body. */
function rpcOf(body: string): { result?: { isError?: boolean; content?: { text?: string }[] } } {
  const data = body.includes('data: ')
    ? body
        .split('\n')
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('')
    : body;
  try {
    return JSON.parse(data) as never;
  } catch {
    return {};
  }
}

async function post(id: string, name: string, args: Record<string, unknown>): Promise<Answer> {
  const sent = Date.now();
  let status = 0;
  let text = '';
  try {
    const res = await fetch(admin.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
        'x-request-id': id,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
      signal: AbortSignal.timeout(20_000),
    });
    status = res.status;
    text = await res.text();
  } catch (err) {
    text = String(err);
  }
  const took = Date.now() - sent;
  let kind: Answer['kind'] = 'other';
  if (status === 503 && /temporarily_unavailable/.test(text)) kind = 'unavailable';
  if (status === 200) {
    const result = rpcOf(text).result;
    const said = result?.content?.map((c) => c.text ?? '').join(' ') ?? '';
    if (result && !result.isError) kind = 'ok';
    else if (
      result?.isError &&
      /database is unreachable|could not reach the database|lost its connection/.test(said)
    )
      kind = 'unavailable';
    text = said || text;
  }
  return { id, sent, took, status, kind, text: text.slice(0, 300) };
}

async function readyz(): Promise<number> {
  return (await fetch(admin.url.toString().replace('/mcp', '/readyz'))).status;
}

async function requestApproval(id: string): Promise<string> {
  const [draft] = await db.sql<{ number: string }[]>`
    select number from invoices i where status = 'draft'
      and not exists (select 1 from bulkhead_approvals a where a.arguments->>'invoice_number' = i.number)
    order by number limit 1`;
  const answer = await post(id, 'send_invoice', { invoice_number: draft!.number });
  expect(answer.kind).toBe('ok');
  const [row] = await db.sql<{ id: string }[]>`
    select id from bulkhead_approvals where arguments->>'invoice_number' = ${draft!.number}`;
  return row!.id;
}

async function statusOf(approvalId: string): Promise<string> {
  const [row] = await db.sql<
    { status: string }[]
  >`select status from bulkhead_approvals where id = ${approvalId}`;
  return row!.status;
}

/** Resolves once `check` holds (no deadline of its own: a state never reached times the test out). */
async function until(check: () => Promise<boolean>): Promise<boolean> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 100));
  return true;
}

it('survives 30 s without Postgres under load: answers every call, serves again, loses and doubles no event, approvals go on', async () => {
  const approver = await testApprover(db, 'finance@example.test');
  const beforeOutage = await requestApproval('approval-before-outage');
  const duringOutage = await requestApproval('approval-decided-during-outage');

  const answers: Answer[] = [];
  let running = true;
  let n = 0;
  const workers = Array.from({ length: WORKERS }, async () => {
    while (running) {
      answers.push(await post(`outage-${n++}`, 'list_invoices', { limit: 1 }));
      await new Promise((r) => setTimeout(r, PACE_MS));
    }
  });

  await new Promise((r) => setTimeout(r, 3000));
  await relay.down();
  const downAt = Date.now();
  // Decided while the server cannot reach the database: the console (with its own connection) records the decision.
  await approver.decide(duringOutage, 'approve', { reason: 'decided while admin was cut off' });
  await new Promise((r) => setTimeout(r, OUTAGE_MS / 2));
  const readyDuring = await readyz();
  // The metrics still answer, and say what is going on.
  const metricsDuring = await (await fetch(admin.url.toString().replace('/mcp', '/metrics'))).text();
  await new Promise((r) => setTimeout(r, OUTAGE_MS / 2 - (Date.now() - downAt - OUTAGE_MS / 2)));
  // The outage lasts its 30 s and until enough calls answered in it (a count of answers, not of seconds).
  const inOutage = () => answers.filter((a) => a.sent > downAt + 1000).length;
  await until(async () => inOutage() >= DURING);
  expect(admin.child.exitCode).toBeNull();
  await relay.up();
  const upAt = Date.now();
  // Until service is back: AFTER calls in a row served (never served times the test out).
  await until(async () => {
    const since = answers.filter((a) => a.sent >= upAt);
    return since.length >= AFTER && since.slice(-AFTER).every((a) => a.kind === 'ok');
  });
  running = false;
  await Promise.all(workers);
  expect(admin.child.exitCode).toBeNull();
  expect(readyDuring).toBe(503);
  expect(metricsDuring).toMatch(/^bulkhead_db_up\{server="admin"\} 0$/m);
  expect(
    Number(/^bulkhead_audit_held_events\{server="admin"\} (\d+)$/m.exec(metricsDuring)?.[1]),
  ).toBeGreaterThan(0);
  expect(await readyz()).toBe(200);

  // Every answer was a result or a clear "unavailable"; nothing hung (a hung call would have been cut
  // off by the client and counted as "other").
  const others = answers.filter((a) => a.kind === 'other');
  expect(others).toEqual([]);
  const during = answers.filter((a) => a.sent > downAt + 1000 && a.sent + a.took < upAt);
  expect(during.length).toBeGreaterThanOrEqual(DURING);
  expect(during.every((a) => a.kind === 'unavailable')).toBe(true);
  const slowest = Math.max(...during.map((a) => a.took));
  // Once one call is served again, every later one is.
  const firstServed = Math.min(
    ...answers.filter((a) => a.sent >= upAt && a.kind === 'ok').map((a) => a.sent),
  );
  const afterRecovery = answers.filter((a) => a.sent >= firstServed);
  expect(afterRecovery.length).toBeGreaterThanOrEqual(AFTER);
  expect(afterRecovery.filter((a) => a.kind !== 'ok')).toEqual([]);

  // Every request has exactly one audit event: none lost in the outage, none written twice.
  const sent = answers.map((a) => a.id);
  const complete = await until(async () => {
    const [row] = await db.sql<{ n: number }[]>`
      select count(distinct request_id)::int as n from audit_events where request_id = any(${sent})`;
    return row!.n === sent.length;
  });
  const counts = await db.sql<{ request_id: string; n: number }[]>`
    select request_id, count(*)::int as n from audit_events where request_id = any(${sent}) group by 1`;
  expect(complete).toBe(true);
  expect(counts.filter((c) => c.n !== 1)).toEqual([]);
  expect(counts.length).toBe(sent.length);
  const held = await db.sql<{ n: number }[]>`
    select count(*)::int as n from audit_events
    where request_id = any(${sent}) and outcome = 'unavailable' and result_summary ? 'held_since'`;
  expect(held[0]!.n).toBeGreaterThan(0);

  // Approvals go on: the one decided during the outage runs once the server is back, and new ones work.
  expect(await until(async () => (await statusOf(duringOutage)) === 'executed')).toBe(true);
  await approver.decide(beforeOutage, 'approve', { reason: 'after the outage' });
  expect(await until(async () => (await statusOf(beforeOutage)) === 'executed')).toBe(true);
  const after = await requestApproval('approval-after-outage');
  await approver.decide(after, 'approve', { reason: 'after the outage' });
  expect(await until(async () => (await statusOf(after)) === 'executed')).toBe(true);

  console.info(
    `outage: ${answers.length} calls, ${during.length} during the outage (slowest ${slowest} ms), ` +
      `first served ${firstServed - upAt} ms after Postgres returned, ${held[0]!.n} events held and written late`,
  );
}, 120_000);
