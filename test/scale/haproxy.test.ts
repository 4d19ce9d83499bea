import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { parseToken, revokeToken } from '@bulkhead/core/operator';
import { connectTaskClient, connectTestClient, issueTestToken, testApprover } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../../servers/admin/src/server.ts';
import { customerServer } from '../../servers/customer/src/server.ts';
import { freePort, listStatus, spawnServer, type ServerProcess } from '../helpers.ts';
import { recordFigures } from './figures.ts';
import { haproxyStats } from './haproxy-stats.ts';

// Issue 27, item 3: replicas behind one address. Two replicas of the customer server behind HAProxy
// (the Debian package, run here as a child process on loopback), real MCP clients connected to
// HAProxy's address. Under steady load one replica is killed (SIGKILL) and restarted on its port
// two seconds later: at most the calls in flight on it fail, each with a clear error, none hangs,
// and the pair serves 20 calls in a row again soon after. Then the rate limit and revocation hold
// across the pair when every call goes through the balancer.

const HAPROXY = '/usr/sbin/haproxy';
const CUSTOMERS = Array.from({ length: 8 }, (_, i) => `C-${1001 + i}`);
/** Callers, each with one call in flight at a time. */
const CALLERS = 16;
const LOAD_MS = 8_000;
const KILL_AT_MS = 2_500;
const RESTART_AFTER_MS = 2_000;
/** The customer tools' time limit (5 s), and what a client waits beyond it before it counts a call as hung. */
const LIMIT_MS = 5_000;
const HUNG_MS = LIMIT_MS + 5_000;
const READS = [
  { name: 'get_account_balance', arguments: {} },
  { name: 'list_open_invoices', arguments: { limit: 5 } },
  { name: 'list_my_tickets', arguments: { limit: 5 } },
];
/** What a client sees when its call's replica died under it: HAProxy's 502 or a lost connection. */
const CLEAR_ERROR =
  /\b502\b|bad gateway|socket hang up|ECONNRESET|fetch failed|terminated|other side closed/i;

interface Pair {
  server: string;
  databaseUrl: string;
  replicas: ServerProcess[];
  ports: number[];
  url: URL;
  /** HAProxy's view of each replica: its status (UP, DOWN) and how many requests it was sent. */
  stats: () => Promise<{ status: string; sent: number; failed: number; redispatched: number }[]>;
  haproxy: ChildProcess;
  output: () => string;
  dir: string;
}

let db: TestDatabase;
let customerUrl: string;
const pairs: Pair[] = [];
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** HAProxy's configuration: round robin over two replicas, a dead one taken out by /readyz checks, refused connections retried on the other. */
function config(port: number, statsPort: number, ports: number[]): string {
  return [
    'global',
    '  maxconn 2000',
    'defaults',
    '  mode http',
    '  timeout connect 1s',
    '  timeout client 30s',
    '  timeout server 30s',
    '  timeout http-request 10s',
    '  retries 2',
    '  option redispatch',
    '  retry-on conn-failure',
    'frontend mcp',
    `  bind 127.0.0.1:${port}`,
    '  default_backend replicas',
    'backend replicas',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  default-server inter 500 fall 2 rise 1',
    ...ports.map((p, i) => `  server r${i + 1} 127.0.0.1:${p} check`),
    'listen stats',
    `  bind 127.0.0.1:${statsPort}`,
    '  stats enable',
    '  stats uri /stats',
    '',
  ].join('\n');
}

/** Two replicas of `server` (the customer server unless said) with `env`, and HAProxy in front of them. */
async function startPair(
  env: Record<string, string>,
  server = 'customer',
  databaseUrl = customerUrl,
): Promise<Pair> {
  const replicas = await Promise.all([
    spawnServer(server, databaseUrl, env),
    spawnServer(server, databaseUrl, env),
  ]);
  const ports = replicas.map((r) => Number(r.url.port));
  const port = await freePort();
  const statsPort = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-haproxy-'));
  await writeFile(join(dir, 'haproxy.cfg'), config(port, statsPort, ports));
  const haproxy = spawn(HAPROXY, ['-f', join(dir, 'haproxy.cfg'), '-db'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  haproxy.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  haproxy.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const stats = async () => {
    const rows = await haproxyStats(statsPort);
    return ports.map((_, i) => {
      const row = rows.find((r) => r.pxname === 'replicas' && r.svname === `r${i + 1}`)!;
      return {
        status: row.status!,
        sent: Number(row.stot),
        /** Responses that failed on this replica (its connection lost mid-answer), and requests it refused that went to the other. */
        failed: Number(row.eresp) + Number(row.srv_abrt),
        redispatched: Number(row.wredis),
      };
    });
  };
  const pair: Pair = {
    server,
    databaseUrl,
    replicas,
    ports,
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    stats,
    haproxy,
    output: () => out,
    dir,
  };
  pairs.push(pair);
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (haproxy.exitCode !== null) throw new Error(`haproxy exited: ${out}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) break;
    } catch {
      // not yet listening
    }
    if (Date.now() > deadline) throw new Error(`haproxy did not come up: ${out}`);
    await pause(100);
  }
  return pair;
}

beforeAll(async () => {
  if (!existsSync(HAPROXY))
    throw new Error(
      `${HAPROXY} is absent: install HAProxy (Debian: apt-get install haproxy; .ci/run does it) to run test/scale/haproxy.test.ts`,
    );
  db = await createTestDatabase();
  await seedDemo(db.sql);
  customerUrl = (await db.as(customerServer.name)).url;
}, 60_000);

afterAll(async () => {
  for (const p of pairs) {
    p.haproxy.kill('SIGTERM');
    await Promise.all(p.replicas.map((r) => r.stop()));
    await rm(p.dir, { recursive: true, force: true });
  }
  await db?.drop();
});

interface Answer {
  ok: boolean;
  hung: boolean;
  text: string;
  started: number;
  ended: number;
}

async function read(client: Client, call: (typeof READS)[number]): Promise<Answer> {
  const started = performance.now();
  try {
    const result = await client.callTool(call, { timeout: HUNG_MS });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');
    return { ok: result.isError !== true, hung: false, text, started, ended: performance.now() };
  } catch (err) {
    const text =
      err instanceof Error
        ? `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}`
        : String(err);
    return { ok: false, hung: /timed? ?out/i.test(text), text, started, ended: performance.now() };
  }
}

describe('two customer replicas behind HAProxy', () => {
  it('a replica killed under load and restarted: only calls in flight on it fail, clearly; none hangs; the pair recovers', async () => {
    const pair = await startPair({ BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' });
    const clients = await Promise.all(
      CUSTOMERS.map(async (customerId) =>
        connectTestClient(
          pair.url,
          await issueTestToken(db.sql, customerServer, { customerId }),
          'haproxy-test',
        ),
      ),
    );
    try {
      const answers: Answer[] = [];
      const t0 = performance.now();
      const until = t0 + LOAD_MS;
      let inFlight = 0;
      let inFlightAtKill = -1;
      let killedAt = 0;
      /** When the killed process had ended: a call started until then may still have been sent to it. */
      let deadAt = 0;
      let sentAtRestart = 0;
      const callers = Array.from({ length: CALLERS }, async (_, i) => {
        const client = clients[i % clients.length]!;
        for (let n = 0; performance.now() < until; n++) {
          inFlight++;
          const a = await read(client, READS[(i + n) % READS.length]!);
          inFlight--;
          answers.push(a);
        }
      });
      const killer = (async () => {
        await pause(KILL_AT_MS);
        inFlightAtKill = inFlight;
        killedAt = performance.now();
        await pair.replicas[0]!.stop('SIGKILL');
        deadAt = performance.now();
        await pause(RESTART_AFTER_MS);
        pair.replicas[0] = await spawnServer(
          'customer',
          customerUrl,
          { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' },
          pair.ports[0],
        );
        sentAtRestart = (await pair.stats())[0]!.sent;
      })();
      await Promise.all([...callers, killer]);
      // After the load: HAProxy takes the restarted replica back once a check passes (every 0.5 s; on a
      // busy machine the restart itself may end with the load), and both answer through the balancer.
      for (let i = 0; i < 600 && (await pair.stats())[0]!.status !== 'UP'; i++) await pause(50);
      const after = await Promise.all([...clients, ...clients].map((c) => read(c, READS[0]!)));
      const [restarted, other] = await pair.stats();

      const served = answers.filter((a) => a.ok);
      const hung = answers.filter((a) => a.hung);
      const failed = answers.filter((a) => !a.ok && !a.hung);
      // Seconds from the kill until 20 calls in a row (in the order they were answered) succeeded.
      const ordered = answers.filter((a) => a.ended >= killedAt).sort((a, b) => a.ended - b.ended);
      let run = 0;
      let recoveredAt = Number.NaN;
      for (const a of ordered) {
        run = a.ok ? run + 1 : 0;
        if (run === 20) {
          recoveredAt = a.ended;
          break;
        }
      }
      const recovery = (recoveredAt - killedAt) / 1000;
      const texts = [...new Set(failed.map((a) => a.text.slice(0, 160)))];
      console.log(
        `haproxy: killed replica under load — ${answers.length} calls attempted by ${CALLERS} callers over ${LOAD_MS / 1000} s, ` +
          `${served.length} served, ${failed.length} refused with a clear error (${inFlightAtKill} in flight at the kill, the process gone ${Math.round(deadAt - killedAt)} ms after the signal), ` +
          `${hung.length} hung, ${recovery.toFixed(2)} s from the kill to 20 successes in a row; ` +
          `restarted after ${RESTART_AFTER_MS / 1000} s, then sent ${restarted!.sent - sentAtRestart} calls (${restarted!.status}; the other ${other!.sent} in all); ` +
          `HAProxy: ${restarted!.failed} answers lost on the killed replica, ${other!.failed} on the other, ${restarted!.redispatched} refused connections redispatched; ` +
          `failed calls started at most ${Math.round(Math.max(0, ...failed.map((a) => a.started - killedAt)))} ms after the kill; errors: ${texts.join(' | ') || 'none'}`,
      );
      recordFigures({
        scenario: 'HAProxy: customer replica killed (kill -9) under load, restarted',
        attempted: answers.length,
        served: served.length,
        refused: failed.length,
        hung: hung.length,
        recoverSeconds: Number(recovery.toFixed(2)),
        other: { 'in flight at the kill': inFlightAtKill, 'lost on the other replica': other!.failed },
      });
      expect(hung.length).toBe(0);
      for (const a of failed) expect(a.text).toMatch(CLEAR_ERROR);
      // Only calls in flight on the killed replica may fail: never more than the callers, none started after it had ended.
      expect(failed.length).toBeLessThanOrEqual(CALLERS);
      // A race this keeps visible (seen once in CI): HAProxy learns that the dead replica's idle
      // connections are closed only when it next reads them, so a call sent a moment after the test saw
      // the exit can still go down one of them ("other side closed", started 1 ms after).
      expect(failed.filter((a) => a.started > deadAt)).toEqual([]);
      expect(Number.isFinite(recovery)).toBe(true);
      for (const a of after) expect(a, a.text).toMatchObject({ ok: true });
      // The restarted replica serves directly, and HAProxy had it back (it answers through the balancer).
      expect((await fetch(new URL('/readyz', pair.replicas[0]!.url))).status).toBe(200);
      expect(restarted!.status).toBe('UP');
      // HAProxy lost no answer of the replica that lived.
      expect(other!.failed).toBe(0);
      // Back in rotation: HAProxy sent it calls again (at least some of the reads after the load, round robin).
      expect(restarted!.sent - sentAtRestart).toBeGreaterThan(0);
      expect(pair.haproxy.exitCode).toBeNull();
    } finally {
      await Promise.all(clients.map((c) => c.close().catch(() => {})));
    }
  }, 90_000);

  describe('rate limit and revocation through the balancer', () => {
    let pair: Pair;
    beforeAll(async () => {
      pair = await startPair({ BULKHEAD_RATE_LIMIT_PER_MINUTE: '60', LOG_LEVEL: 'warn' });
    }, 60_000);

    it('one token sending 100 calls through the balancer gets at most 60 + the documented replica overshoot, then 429s', async () => {
      const token = await issueTestToken(db.sql, customerServer, { customerId: 'C-1001' });
      const statuses: number[] = [];
      // Paced: one call every 20 ms (2 s in all), so the replicas exchange counts twice along the way.
      for (let i = 0; i < 100; i++) {
        statuses.push(await listStatus(pair.url, token));
        await pause(20);
      }
      // Then on until 10 calls in a row are refused: once the replicas have exchanged their counts
      // (every second), each knows the token is over its limit. Every admission counts, those too.
      while (statuses.length < 300 && !statuses.slice(-10).every((s) => s === 429)) {
        statuses.push(await listStatus(pair.url, token));
        await pause(20);
      }
      const admitted = statuses.filter((s) => s === 200).length;
      const refused = statuses.filter((s) => s === 429).length;
      console.log(
        `haproxy: rate limit 60/min across 2 replicas — ${statuses.length} calls of one token (100 paced, then until 10 refusals in a row), ` +
          `${admitted} admitted, ${refused} refused 429, ${statuses.length - admitted - refused} other; last 10: ${statuses.slice(-10).join(' ')}`,
      );
      recordFigures({
        scenario: 'HAProxy: one token over its limit (60/min) across 2 customer replicas',
        attempted: statuses.length,
        served: admitted,
        refused,
        other: { 'admitted over the limit': admitted - 60 },
      });
      expect(admitted + refused).toBe(statuses.length);
      expect(admitted).toBeGreaterThanOrEqual(60);
      // At most (replicas − 1) × the allowance left at the last exchange over the limit: here 60 + 60.
      expect(admitted).toBeLessThanOrEqual(120);
      expect(statuses.slice(-10).every((s) => s === 429)).toBe(true);
    }, 30_000);

    it('a revoked token is refused 401 through the balancer, by both replicas', async () => {
      const token = await issueTestToken(db.sql, customerServer, { customerId: 'C-1002' });
      // Warm both replicas' caches (round robin alternates).
      for (let i = 0; i < 6; i++) expect(await listStatus(pair.url, token)).toBe(200);
      const started = Date.now();
      await revokeToken(db.sql, parseToken(token)!.id);
      // Until 10 calls in a row through the balancer (five on each replica) are refused; a replica that
      // never refuses times the test out. How soon is printed for the scale table, not asserted: the
      // second is the token cache's promise, tested with the clock in hand (packages/core/src/serve/tokens.test.ts).
      let run = 0;
      let calls = 0;
      while (run < 10) {
        calls++;
        run = (await listStatus(pair.url, token)) === 401 ? run + 1 : 0;
      }
      const ms = Date.now() - started;
      const direct = await Promise.all(pair.replicas.map((r) => listStatus(r.url, token)));
      console.log(
        `haproxy: revocation across 2 replicas — ${ms} ms from revoke to 10 refusals in a row through the balancer ` +
          `(${calls} calls); directly: ${direct.join(' ')}`,
      );
      expect(run).toBe(10);
      expect(direct).toEqual([401, 401]);
    }, 30_000);
  });
});

describe('two admin replicas behind HAProxy: gated calls as tasks', () => {
  /** Gated calls made as tasks, and the pollers asking tasks/get about them through the balancer. */
  const TASKS = 12;
  const POLLERS = 4;

  interface Poll {
    taskId: string;
    status: string;
    result: string;
    started: number;
    ended: number;
  }

  it('created, approved and polled through the balancer while a replica is killed and restarted: every task shows one state, each approved action runs once', async () => {
    const env = { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' };
    const pair = await startPair(env, 'admin', (await db.as(adminServer.name)).url);
    const token = await issueTestToken(db.sql, adminServer, { label: 'Agent framework (billing)' });
    const approver = await testApprover(db, 'jonas@example.test');
    const client = await connectTaskClient(pair.url, token, 'haproxy-tasks');
    try {
      const invoices = await db.sql<{ number: string }[]>`
        select invoice_number as number from invoice_balances
        where status in ('open', 'overdue') and due_cents >= 5000 order by invoice_number limit ${TASKS}`;
      expect(invoices).toHaveLength(TASKS);
      const ids: string[] = [];
      for (const invoice of invoices) {
        const created = await client.callToolAsTask('issue_credit_note', {
          invoice_number: invoice.number,
          amount_cents: 1000,
          reason: 'Goodwill credit, asked through the balancer.',
        });
        expect(created).toMatchObject({ resultType: 'task', status: 'working' });
        ids.push(created.taskId as string);
      }

      const polls: Poll[] = [];
      let failed = 0;
      let hung = 0;
      const errors = new Set<string>();
      const done = new Set<string>();
      let next = 0;
      const pollers = Array.from({ length: POLLERS }, async () => {
        while (done.size < TASKS) {
          const taskId = ids[next++ % TASKS]!;
          if (done.has(taskId)) continue;
          const started = performance.now();
          try {
            const task = await client.task('tasks/get', { taskId });
            const status = String(task.status);
            polls.push({
              taskId,
              status,
              result: JSON.stringify(task.result ?? null),
              started,
              ended: performance.now(),
            });
            if (status !== 'working') done.add(taskId);
          } catch (err) {
            const text = err instanceof Error ? `${err.message} ${String(err.cause ?? '')}` : String(err);
            if (/timed? ?out/i.test(text)) hung++;
            else failed++;
            errors.add(text.slice(0, 160));
          }
          await pause(25);
        }
      });
      let killedAt = 0;
      const approvals = (async () => {
        for (const [i, id] of ids.entries()) {
          if (i === TASKS / 2) {
            killedAt = performance.now();
            await pair.replicas[0]!.stop('SIGKILL');
            await pause(RESTART_AFTER_MS);
            pair.replicas[0] = await spawnServer('admin', pair.databaseUrl, env, pair.ports[0]);
          }
          await approver.decide(id, 'approve', { reason: 'Agreed with sales.' });
          await pause(150);
        }
      })();
      await Promise.all([...pollers, approvals]);

      // Asked once more each, after all is done: the same answer as the first that said completed.
      const final = new Map<string, string>();
      for (const id of ids) {
        const task = await client.task('tasks/get', { taskId: id });
        expect(task.status, id).toBe('completed');
        final.set(id, JSON.stringify(task.result));
      }
      let regressions = 0;
      let differentResults = 0;
      for (const id of ids) {
        // Polls overlap: one asked before the completion may answer after one asked later. A poll that
        // went back is one sent after a "completed" answer had arrived and answering otherwise.
        const mine = polls.filter((p) => p.taskId === id);
        const completed = mine.filter((p) => p.status === 'completed');
        expect(completed.length, id).toBeGreaterThan(0);
        const firstDone = Math.min(...completed.map((p) => p.ended));
        regressions += mine.filter((p) => p.started > firstDone && p.status !== 'completed').length;
        differentResults += completed.filter((p) => p.result !== final.get(id)).length;
      }
      const notes = await db.sql<{ approvalId: string; n: number }[]>`
        select approval_id as "approvalId", count(*)::int as n from credit_notes
        where approval_id in ${db.sql(ids)} group by approval_id`;
      const executions = await db.sql<{ approvalId: string; n: number }[]>`
        select approval_id as "approvalId", count(*)::int as n from audit_events
        where approval_id in ${db.sql(ids)} and method = 'approvals/execute' and outcome = 'executed'
        group by approval_id`;
      const twice = notes.filter((r) => r.n > 1).length + executions.filter((r) => r.n > 1).length;
      const lost = TASKS - notes.length;
      const withoutEvent = notes.filter((r) => !executions.some((e) => e.approvalId === r.approvalId)).length;
      console.log(
        `haproxy: two admin replicas, ${TASKS} credit notes as tasks — ${polls.length + failed + hung} tasks/get polls through the balancer, ` +
          `${polls.length} answered, ${failed} refused with a clear error (replica killed ${Math.round(killedAt)} ms in), ${hung} hung; ` +
          `${regressions} answers went back from completed, ${differentResults} completed answers differed from the final one; ` +
          `credit notes: ${notes.length} tasks with one, ${twice} run twice, ${lost} lost, ${withoutEvent} without their event; errors: ${[...errors].join(' | ') || 'none'}`,
      );
      recordFigures({
        scenario: 'HAProxy: admin replica killed while tasks are approved and polled',
        attempted: polls.length + failed + hung,
        served: polls.length,
        refused: failed,
        hung,
        effectsWithoutEvents: withoutEvent,
        doubleExecutions: twice,
        other: { tasks: TASKS, lost, 'answers back from completed': regressions },
      });
      expect(hung).toBe(0);
      for (const e of errors) expect(e).toMatch(CLEAR_ERROR);
      expect(regressions).toBe(0);
      expect(differentResults).toBe(0);
      expect(twice).toBe(0);
      expect(lost).toBe(0);
      expect(withoutEvent).toBe(0);
      expect(notes.every((r) => r.n === 1)).toBe(true);
    } finally {
      await client.close().catch(() => {});
    }
  }, 120_000);
});
