import type { Client } from '@modelcontextprotocol/client';
import { connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { loginRole } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customerServer } from '../servers/customer/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

// Issue 31, item 5: the customer server's backends are terminated (as an administrator would, or a
// failover does) while 48 read calls of 10 customers are in flight, several rounds over since the
// races are timing-dependent. Every call must be answered within its time limit (a result, or an
// error that says to try again), every customer's next read must succeed, and the process must live.
// The server runs as `pnpm start` runs it: its own process, its own login role, over real HTTP.

const CUSTOMERS = Array.from({ length: 10 }, (_, i) => `C-${1001 + i}`);
const CONCURRENT = 48;
const ROUNDS = 5;
/** How long each round keeps 48 calls in flight while the backends are killed. */
const ROUND_MS = 2_500;
/** The customer tools' time limit (5 s), and what a client waits beyond it before it counts a call as hung. */
const LIMIT_MS = 5_000;
const HUNG_MS = LIMIT_MS + 5_000;
const READS = [
  { name: 'get_account_balance', arguments: {} },
  { name: 'list_open_invoices', arguments: { limit: 5 } },
  { name: 'list_my_tickets', arguments: { limit: 5 } },
];
/** What an answered call may say when its connection was lost: it failed, and says to try again. */
const CLEAR_ERROR = /could not reach the database|did not finish within|try again|retry in a few seconds/i;

let db: TestDatabase;
let server: ServerProcess;
let url: URL;
const clients = new Map<string, Client>();
/** The server's exit code or signal once it has ended; undefined while it runs. */
const exited = () => server.child.exitCode ?? server.child.signalCode ?? undefined;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const own = await db.as(customerServer.name);
  server = await spawnServer('customer', own.url, { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' });
  url = server.url;
  for (const customerId of CUSTOMERS)
    clients.set(
      customerId,
      await connectTestClient(url, await issueTestToken(db.sql, customerServer, { customerId }), 'kill-test'),
    );
});

afterAll(async () => {
  await Promise.all([...clients.values()].map((c) => c.close().catch(() => {})));
  await server?.stop();
  await db?.drop();
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  customer: string;
  ok: boolean;
  hung: boolean;
  text: string;
  ms: number;
}

/** One read call, answered or counted as hung once it is past its time limit and a margin. */
async function read(customer: string, call: (typeof READS)[number]): Promise<Answer> {
  const started = performance.now();
  try {
    const result = await clients.get(customer)!.callTool(call, { timeout: HUNG_MS });
    const text = (result.content as { text?: string }[]).map((c) => c.text ?? '').join('\n');
    return { customer, ok: result.isError !== true, hung: false, text, ms: performance.now() - started };
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    return { customer, ok: false, hung: /timed? ?out/i.test(text), text, ms: performance.now() - started };
  }
}

/** Terminates every backend of the customer server's login role in this database; returns their pids. */
async function killBackends(): Promise<number[]> {
  const rows = await db.admin<{ pid: number }[]>`
    select pid from pg_stat_activity
    where usename = ${loginRole(customerServer.name)} and datname = current_database()`;
  const pids = rows.map((r) => r.pid);
  if (pids.length) await db.admin`select pg_terminate_backend(pid) from unnest(${pids}::int[]) as pid`;
  return pids;
}

/** Until every one of `pids` has gone from the server. */
async function gone(pids: number[]) {
  for (let i = 0; i < 100; i++) {
    const [row] = await db.admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where pid = any(${pids}::int[])`;
    if (row!.n === 0) return;
    await pause(20);
  }
}

describe('the customer server under terminated backends', () => {
  it(`answers every one of ${CONCURRENT} concurrent reads of ${CUSTOMERS.length} customers while its backends are killed, ${ROUNDS} rounds over, and serves every customer after`, async () => {
    const answers: Answer[] = [];
    const after: Answer[] = [];
    let kills = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const until = performance.now() + ROUND_MS;
      // 48 callers, each with one call in flight at a time until the round ends: customers by turns.
      const callers = Array.from({ length: CONCURRENT }, async (_, i) => {
        const customer = CUSTOMERS[i % CUSTOMERS.length]!;
        for (let n = 0; performance.now() < until; n++)
          answers.push(await read(customer, READS[(i + n) % READS.length]!));
      });
      // One to five kills at random moments of the round.
      const times = 1 + Math.floor(Math.random() * 5);
      const killed: number[] = [];
      const killer = (async () => {
        for (let k = 0; k < times; k++) {
          await pause(Math.random() * (ROUND_MS / times));
          killed.push(...(await killBackends()));
          kills++;
        }
      })();
      await Promise.all([...callers, killer]);
      await gone(killed);
      // Every customer, right after: its read succeeds.
      after.push(...(await Promise.all(CUSTOMERS.map((c) => read(c, READS[0]!)))));
      expect(exited(), server.output()).toBeUndefined();
    }
    const hungAfter = after.filter((a) => a.hung);
    const hung = answers.filter((a) => a.hung).length + hungAfter.length;
    const failed = answers.filter((a) => !a.ok && !a.hung);
    const texts = [...new Set(failed.map((a) => a.text.replace(/incident \w+/, 'incident …')))];
    console.log(
      `backend kills: ${kills} in ${ROUNDS} rounds; ${answers.length} calls during them, ` +
        `${failed.length} answered with an error, ${hung} hung (${hungAfter.length} of the ${after.length} after the kills, ` +
        `customers ${[...new Set(hungAfter.map((a) => a.customer))].join(' ')}); ` +
        `slowest answer ${Math.round(Math.max(...answers.filter((a) => !a.hung).map((a) => a.ms)))} ms; errors: ${texts.join(' | ')}`,
    );
    expect(hung).toBe(0);
    // Every error said what happened and that the call may be repeated (none an internal error).
    // An internal error names its incident: the server's log lines for it say what went wrong.
    const logOf = (text: string) => {
      const incident = /incident (\w+)/.exec(text)?.[1];
      return incident
        ? server
            .output()
            .split('\n')
            .filter((l) => l.includes(incident))
            .join('\n')
        : '';
    };
    for (const a of failed) expect(a.text, logOf(a.text)).toMatch(CLEAR_ERROR);
    for (const a of after) expect(a, a.text).toMatchObject({ ok: true });
    expect(exited(), server.output()).toBeUndefined();
    // Nor did a connection error escape unhandled (the server logs one and serves on; it ended the process before).
    expect(server.output()).not.toContain('unhandled database connection error');
    expect((await fetch(new URL('/readyz', url))).status).toBe(200);
  }, 240_000);
});
