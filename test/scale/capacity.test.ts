import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { POOL_MAX, READ_POOL_MAX } from '@bulkhead/core';
import { connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { ensureLogin } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { customerServer } from '../../servers/customer/src/server.ts';
import { freePort, root, spawnServer, type ServerProcess } from '../helpers.ts';
import { recordFigures } from './figures.ts';

// Issue 27, item 4: capacity. A replica of an MCP server holds at most its main pool, its read pool and
// the one LISTEN connection of postgres.js; measured here at saturation. Then three replicas under a
// login whose CONNECTION LIMIT is smaller than they need: every call is answered (a result, or "could
// not reach the database … try again"), no process ends, each serves again after; and a replica
// started while the limit is used up entirely ends at once with a sentence that says what to do.
// The login is this file's own (a member of the customer's group role), not the shared test login,
// so that its limit touches no other test running at the same time.

const CUSTOMERS = Array.from({ length: 10 }, (_, i) => `C-${1001 + i}`);
/** Callers per replica, each with one call in flight at a time: more than a replica has connections. */
const CALLERS = 24;
const LOAD_MS = 3_000;
/** The customer tools' time limit (5 s), and what a client waits beyond it before it counts a call as hung. */
const LIMIT_MS = 5_000;
const HUNG_MS = LIMIT_MS + 5_000;
/** What one replica may hold: its two pools and the LISTEN connection. */
const PER_REPLICA = POOL_MAX + READ_POOL_MAX + 1;
/** The login's limit for three replicas: fewer than they need at their peak (3 × 13), more than they need to start. */
const LIMIT = 20;
const READS = [
  { name: 'get_account_balance', arguments: {} },
  { name: 'list_open_invoices', arguments: { limit: 5 } },
  { name: 'list_my_tickets', arguments: { limit: 5 } },
];
const WRITE = {
  name: 'open_ticket',
  arguments: { subject: 'Capacity test', category: 'question', body: 'Opened by the capacity test.' },
};
/** What a call that got no connection says: the database could not be reached, try again. */
const CLEAR_ERROR = /could not reach the database|did not finish within|try again|retry in a few seconds/i;

const login = `bh_cap_${randomBytes(4).toString('hex')}`;
/** A login of the console's, for the start with no connection left. */
const consoleLogin = `${login}_console`;
let db: TestDatabase;
let loginUrl: string;
const replicas: ServerProcess[] = [];
const clients = new Map<string, Client>();
/** Each replica's clients, one per customer. */
const byReplica: Map<string, Client>[] = [];

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const exited = (s: ServerProcess) => s.child.exitCode ?? s.child.signalCode ?? undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  await db.as(customerServer.name);
  await ensureLogin(db.admin, customerServer.name, login, 'bulkhead-test', { connectionLimit: 100 });
  const url = new URL(db.url);
  url.username = login;
  url.password = 'bulkhead-test';
  loginUrl = url.toString();
});

afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close().catch(() => {})));
  await Promise.all(replicas.map((r) => r.stop()));
  // The role is the cluster's: dropped once its processes are gone (it owns nothing).
  if (db)
    for (const role of [login, consoleLogin])
      await db.admin.unsafe(`drop role if exists ${role}`).catch(() => {});
  await db?.drop();
});

/** Connections `role` holds in this database now, and how many of them LISTEN. */
async function held(role = login): Promise<{ total: number; listen: number }> {
  const [row] = await db.admin<{ total: number; listen: number }[]>`
    select count(*)::int as total, count(*) filter (where query ilike 'listen%')::int as listen
    from pg_stat_activity where usename = ${role} and datname = current_database()`;
  return row!;
}

/** Samples `role`'s connections every 20 ms until stopped; the peak. */
function sample(role = login): { stop: () => Promise<{ peak: number; peakListen: number }> } {
  let peak = 0;
  let peakListen = 0;
  let done = false;
  const running = (async () => {
    while (!done) {
      const now = await held(role);
      peak = Math.max(peak, now.total);
      peakListen = Math.max(peakListen, now.listen);
      await pause(20);
    }
  })();
  return {
    stop: async () => {
      done = true;
      await running;
      return { peak, peakListen };
    },
  };
}

/** A process of this repository's, its output kept; resolves its exit code (null: killed after `ms`). */
function run(args: string[], env: Record<string, string>, cwd = root) {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd,
    env: { ...process.env, BULKHEAD_MIGRATE: 'false', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exit = (ms: number) =>
    new Promise<number | null>((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, ms);
      child.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  return { child, output: () => output, exit };
}

async function startReplica(): Promise<Map<string, Client>> {
  const server = await spawnServer('customer', loginUrl, {
    BULKHEAD_RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  });
  replicas.push(server);
  const own = new Map<string, Client>();
  for (const customerId of CUSTOMERS) {
    const token = await issueTestToken(db.sql, customerServer, { customerId });
    const client = await connectTestClient(server.url, token, 'capacity-test');
    own.set(customerId, client);
    clients.set(`${replicas.length}:${customerId}`, client);
  }
  byReplica.push(own);
  return own;
}

interface Answer {
  ok: boolean;
  hung: boolean;
  unavailable: boolean;
  text: string;
  ms: number;
}

async function call(
  client: Client,
  request: { name: string; arguments: Record<string, unknown> },
): Promise<Answer> {
  const started = performance.now();
  try {
    const result = await client.callTool(request, { timeout: HUNG_MS });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');
    const ok = result.isError !== true;
    return {
      ok,
      hung: false,
      unavailable: !ok && /could not reach the database/.test(text),
      text,
      ms: performance.now() - started,
    };
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return {
      ok: false,
      hung: /timed? ?out/i.test(text),
      unavailable: false,
      text,
      ms: performance.now() - started,
    };
  }
}

/** `CALLERS` callers on each of `targets` for `LOAD_MS`, reads of all customers with every fourth call a write; samples the login's connections meanwhile. */
async function load(
  targets: Map<string, Client>[],
): Promise<{ answers: Answer[]; peak: number; peakListen: number }> {
  const answers: Answer[] = [];
  const until = performance.now() + LOAD_MS;
  const sampler = sample();
  await Promise.all(
    targets.flatMap((own) =>
      Array.from({ length: CALLERS }, async (_, i) => {
        const client = own.get(CUSTOMERS[i % CUSTOMERS.length]!)!;
        for (let n = 0; performance.now() < until; n++)
          answers.push(await call(client, (i + n) % 4 === 3 ? WRITE : READS[(i + n) % READS.length]!));
      }),
    ),
  );
  return { answers, ...(await sampler.stop()) };
}

describe('capacity', () => {
  it(`one customer replica holds at most ${PER_REPLICA} connections at its peak (main pool ${POOL_MAX}, read pool ${READ_POOL_MAX}, LISTEN 1)`, async () => {
    const own = await startReplica();
    // Stopped whatever happens here: a replica left running would hold its connections into the next test.
    onTestFinished(() => replicas[0]!.stop());
    // The sealer, as production runs it (`bulkhead audit seal --follow`), under its own login, sealing the load's events.
    const sealerLogin = new URL((await db.as('sealer')).url);
    const sealer = run(['packages/cli/src/main.ts', 'audit', 'seal', '--follow', '--interval', '50'], {
      DATABASE_URL: sealerLogin.toString(),
      BULKHEAD_AUDIT_KEY: randomBytes(32).toString('hex'),
    });
    const sealing = sample(sealerLogin.username);
    const { answers, peak, peakListen } = await load([own]);
    // The load's events get sealed: at once on an idle machine; a busy one may still be starting the sealer.
    const sealCount = async () =>
      (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_seals`)[0]!.n;
    for (let i = 0; i < 600 && (await sealCount()) === 0 && sealer.child.exitCode === null; i++)
      await pause(50);
    const sealerPeak = await sealing.stop();
    const seals = { n: await sealCount() };
    console.log(
      `sealer (audit seal --follow) during the load: ${seals.n} seals, peak connections ${sealerPeak.peak}`,
    );
    sealer.child.kill('SIGTERM');
    const sealerExit = await sealer.exit(10_000);
    expect({ exit: sealerExit, signal: sealer.child.signalCode }, sealer.output()).toEqual({
      exit: 0,
      signal: null,
    });
    expect(seals.n).toBeGreaterThan(0);
    expect(sealerPeak.peak).toBe(1);
    const failed = answers.filter((a) => !a.ok);
    console.log(
      `one replica, ${CALLERS} callers of ${CUSTOMERS.length} customers, reads and writes: ${answers.length} calls, ` +
        `${failed.length} failed; peak connections ${peak} (LISTEN ${peakListen}); after the load: ${JSON.stringify(await held())}`,
    );
    recordFigures({
      scenario: `Capacity: one customer replica, ${CALLERS} callers`,
      attempted: answers.length,
      served: answers.length - failed.length,
      refused: failed.length,
      other: { 'peak connections': peak, 'sealer peak': sealerPeak.peak },
    });
    expect(failed.map((a) => a.text)).toEqual([]);
    // Saturated: both pools were full at once, with the LISTEN connection beside them; never more.
    expect(peak).toBe(PER_REPLICA);
    expect(peakListen).toBe(1);
    await replicas[0]!.stop();
    // Its backends end a moment after the process: the next test counts from none.
    for (let i = 0; i < 100 && (await held()).total > 0; i++) await pause(50);
    expect(await held()).toEqual({ total: 0, listen: 0 });
  }, 60_000);

  it(`three replicas under a login limited to ${LIMIT} connections answer every call, clearly, and serve again after`, async () => {
    await db.admin.unsafe(`alter role ${login} connection limit ${LIMIT}`);
    await Promise.all(
      [1, 2, 3].map(async () => {
        // One at a time would do; at once is how an orchestrator starts them.
        await startReplica();
      }),
    );
    const running = replicas.slice(1);
    expect(running).toHaveLength(3);
    // What starting takes: the pooler probe's two connections of the main pool, one of the read pool, LISTEN.
    const atStart = await held();
    console.log(`three replicas started: ${JSON.stringify(atStart)}`);
    expect(atStart.total).toBeLessThanOrEqual(3 * 4);
    const { answers, peak } = await load(byReplica.slice(1));
    const hung = answers.filter((a) => a.hung);
    const failed = answers.filter((a) => !a.ok && !a.hung);
    const unavailable = answers.filter((a) => a.unavailable);
    const texts = [...new Set(failed.map((a) => a.text.replace(/incident \w+/, 'incident …')))];
    console.log(
      `three replicas, limit ${LIMIT}: ${answers.length} calls, ${answers.filter((a) => a.ok).length} answered with a result, ` +
        `${failed.length} with an error (${unavailable.length} "could not reach the database"), ${hung.length} hung; ` +
        `peak connections ${peak}; slowest answer ${Math.round(Math.max(...answers.map((a) => a.ms)))} ms; errors: ${texts.join(' | ')}`,
    );
    recordFigures({
      scenario: `Capacity: three replicas under a ${LIMIT}-connection login limit`,
      attempted: answers.length,
      served: answers.filter((a) => a.ok).length,
      refused: failed.length,
      hung: hung.length,
      other: { 'peak connections': peak, 'could not reach the database': unavailable.length },
    });
    expect(hung.map((a) => a.text)).toEqual([]);
    // The limit was reached (else this tested nothing), and held.
    expect(failed.length).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(LIMIT);
    for (const a of failed) expect(a.text).toMatch(CLEAR_ERROR);
    for (const r of running) expect(exited(r), r.output()).toBeUndefined();
    // Every replica serves again, every customer, one call at a time: on the connections it holds (the others
    // keep theirs, idle, for up to 30 s; a replica's call past its own open connections would be refused again).
    const after = (
      await Promise.all(
        byReplica.slice(1).map(async (own) => {
          const answers: Answer[] = [];
          for (const c of own.values()) answers.push(await call(c, READS[0]!));
          return answers;
        }),
      )
    ).flat();
    for (const a of after) expect(a, a.text).toMatchObject({ ok: true });
    // The refusals were audited as such.
    let audited = 0;
    for (let i = 0; i < 50 && audited < unavailable.length; i++) {
      const [row] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from audit_events where server = 'customer' and outcome = 'unavailable'`;
      audited = row!.n;
      if (audited < unavailable.length) await pause(200);
    }
    expect(audited).toBeGreaterThanOrEqual(unavailable.length);
    for (const r of running) expect(exited(r), r.output()).toBeUndefined();
  }, 90_000);

  it('the console holds at most 11 connections at its peak (its pool of 10, LISTEN 1)', async () => {
    const consoleLogin = (await db.as('console')).url;
    const console_ = await spawnServer('console', consoleLogin, { LOG_LEVEL: 'warn' });
    try {
      const sampler = sample(new URL(consoleLogin).username);
      const until = performance.now() + 2_000;
      // Readiness checks take a connection each: 40 at a time fill the pool.
      await Promise.all(
        Array.from({ length: 40 }, async () => {
          while (performance.now() < until)
            expect((await fetch(new URL('/readyz', console_.url))).status).toBe(200);
        }),
      );
      const { peak, peakListen } = await sampler.stop();
      console.log(`console, 40 concurrent readiness checks: peak connections ${peak} (LISTEN ${peakListen})`);
      expect(peak).toBe(11);
      expect(peakListen).toBe(1);
    } finally {
      await console_.stop();
    }
  }, 60_000);

  it('a gated server (token cache and approvals executor, three channels) LISTENs on one connection', async () => {
    const adminLogin = (await db.as('admin')).url;
    const admin = await spawnServer('admin', adminLogin, { LOG_LEVEL: 'warn' });
    try {
      const role = new URL(adminLogin).username;
      // Until the executor's channels are subscribed (its last LISTEN is the outbox's), then a moment more.
      for (let i = 0; i < 100; i++) {
        const [row] = await db.admin<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity
          where usename = ${role} and datname = current_database() and query ilike 'listen%outbox%'`;
        if (row!.n) break;
        await pause(50);
      }
      await pause(300);
      const now = await held(role);
      console.log(`admin (gated) at rest: ${JSON.stringify(now)}`);
      expect(now.listen).toBe(1);
      expect(now.total).toBeLessThanOrEqual(4);
    } finally {
      await admin.stop();
    }
  }, 60_000);

  it('a replica started while the login has no connection left ends at once, saying so and what to do', async () => {
    // Used up entirely: the running replicas keep what they hold; nobody gets another.
    await db.admin.unsafe(`alter role ${login} connection limit 0`);
    const started = performance.now();
    const replica = run(
      ['src/main.ts'],
      { DATABASE_URL: loginUrl, PORT: String(await freePort()) },
      `${root}servers/customer`,
    );
    const code = await replica.exit(20_000);
    const ms = performance.now() - started;
    const stderr = replica.output();
    console.log(`start with the limit used up: exit ${code} after ${Math.round(ms)} ms: ${stderr.trim()}`);
    // It ended by itself, with the code for a failed start (a replica that kept retrying would still be
    // running when `exit` gave up, which answers no code); how long it took is printed above.
    expect(code).toBe(1);
    expect(stderr.trim()).toMatch(
      new RegExp(`^customer: could not connect to PostgreSQL as "${login}": too many connections for role`),
    );
    expect(stderr).toContain(`one customer process holds up to ${PER_REPLICA}`);
    expect(stderr).toContain(`--login customer ${login} --connection-limit`);
    expect(stderr).not.toMatch(/\n\s+at /);
    // The running replicas were not disturbed: each still serves, on the connections it holds.
    for (const r of replicas.slice(1)) expect(exited(r), r.output()).toBeUndefined();
    for (const own of byReplica.slice(1)) {
      const answer = await call(own.get(CUSTOMERS[0]!)!, READS[0]!);
      expect(answer, answer.text).toMatchObject({ ok: true });
    }

    // The console says the same, under a login of its own with no connection to give.
    await ensureLogin(db.admin, 'console', consoleLogin, 'bulkhead-test', { connectionLimit: 0 });
    const url = new URL(loginUrl);
    url.username = consoleLogin;
    const console_ = run(
      ['src/main.ts'],
      { DATABASE_URL: url.toString(), PORT: String(await freePort()) },
      `${root}apps/console`,
    );
    const consoleCode = await console_.exit(20_000);
    console.log(`console started with no connection left: exit ${consoleCode}: ${console_.output().trim()}`);
    expect(consoleCode).toBe(1);
    expect(console_.output().trim()).toMatch(
      new RegExp(
        `^console: could not connect to PostgreSQL as "${consoleLogin}": too many connections for role`,
      ),
    );
    expect(console_.output()).toContain('one console process holds up to 11');
    expect(console_.output()).toContain(`--login console ${consoleLogin} --connection-limit`);
  }, 60_000);
});
