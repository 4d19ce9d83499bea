import { SESSIONS_SHARED } from '@bulkhead/core';
import { callFlat, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { createSql, type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { seedDemo } from '@bulkhead/demo';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { customerServer } from '../../servers/customer/src/server.ts';
import { spawnServer, type ServerProcess } from '../helpers.ts';
import { recordFigures } from './figures.ts';
import { startPgBouncer, type PgBouncer } from './pgbouncer.ts';

// Issue 42, item 7: PgBouncer in transaction mode with `server_round_robin = 1` and two server
// connections kept open passes the start-up probe (each of its two connections gets the same server
// connection back every time), and the customer server then answered wrongly: valid tokens 401,
// "your account no longer exists", results withheld, while /readyz said ready. Now a read lane checks
// where each statement ran: a call whose session moved runs again on a fresh lane, never answers from
// the moved one, and /readyz fails with the start-up check's sentence once it happened again.

let db: TestDatabase;
let login: string;
let pooler: PgBouncer;
/** A client of the pooler kept connected: PgBouncer keeps `min_pool_size` only while a client is. */
let other: Sql;
let server: ServerProcess;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  login = (await db.as('customer')).url;
  pooler = await startPgBouncer(login, 'transaction', true, ['server_round_robin = 1', 'min_pool_size = 2']);
  other = createSql(pooler.through(login), { max: 1 });
  await other.unsafe('select 1', [], { prepare: false });
  const role = decodeURIComponent(new URL(login).username);
  // Until both server connections are open: the probe then alternates between them and sees nothing amiss.
  for (;;) {
    const [row] = await db.admin<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity where usename = ${role} and datname = current_database()`;
    if (row!.n >= 2) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  server = await spawnServer('customer', pooler.through(login), { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0' });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await other?.end({ timeout: 1 });
  await pooler?.stop();
  await db?.drop();
});

/** How an answer to `list_open_invoices` turned out. */
type Verdict = 'right' | 'refused' | 'wrong';

/**
 * An answer is wrong when it holds other invoices than the customer's, or says something untrue: a valid
 * token refused, the account gone, nothing found. Any other error ("could not reach the database, try
 * again", an incident id) is a refusal: nothing untrue was said.
 */
function judge(
  answer: { isError: boolean; text: string; structured?: unknown },
  expected: string[],
): Verdict {
  if (answer.isError) return /no longer exists|not found/i.test(answer.text) ? 'wrong' : 'refused';
  const got = (answer.structured as { invoices: { invoice_number: string }[] }).invoices
    .map((i) => i.invoice_number)
    .sort();
  return JSON.stringify(got) === JSON.stringify(expected) ? 'right' : 'wrong';
}

it('behind a round-robin transaction pooler the probe missed, no call answers wrongly, and /readyz fails with the pooler sentence', async () => {
  // The start-up probe passed: this is the pooler the issue found it missing.
  expect(server.output()).not.toContain(SESSIONS_SHARED);
  const rows = await db.sql<{ customer: string; numbers: string[] }[]>`
    select customer_id as customer, array_agg(invoice_number order by invoice_number) as numbers
    from invoice_balances where status in ('open', 'overdue')
    group by customer_id order by count(*) desc, customer_id limit 4`;
  const tally: Record<Verdict | 'unauthorized' | 'hung', number> = {
    right: 0,
    refused: 0,
    wrong: 0,
    unauthorized: 0,
    hung: 0,
  };
  const samples: string[] = [];
  const clients: { expected: string[]; client: Client }[] = [];
  for (const { customer, numbers } of rows) {
    const token = await issueTestToken(db.sql, customerServer, { customerId: customer });
    // Connecting may be refused (the database unreachable, 503) like any call; a valid token never is (401).
    for (let tries = 0; tries < 20; tries++) {
      try {
        clients.push({
          expected: numbers,
          client: await connectTestClient(server.url, token, `rr-${customer}`),
        });
        break;
      } catch (err) {
        if (/invalid_token/.test(String(err))) tally.unauthorized++;
      }
    }
  }
  expect(clients.length).toBe(rows.length);

  const CALLS = 200;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < CALLS) {
        const c = clients[next++ % clients.length]!;
        // The tool's time limit is 5 s; an answer later than that plus a grace is a hung call.
        let timer: NodeJS.Timeout | undefined;
        const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 15_000)));
        try {
          const answer = await Promise.race([callFlat(c.client, 'list_open_invoices', { limit: 100 }), hung]);
          if (answer === 'hung') {
            tally.hung++;
            continue;
          }
          const verdict = judge(answer, c.expected);
          tally[verdict]++;
          if (verdict === 'wrong' && samples.length < 5) samples.push(answer.text.slice(0, 300));
        } catch (err) {
          // An HTTP refusal: 503 says the database is unreachable; 401 would call a valid token invalid.
          if (/invalid_token/.test(String(err))) {
            tally.unauthorized++;
            if (samples.length < 5) samples.push(String(err).slice(0, 300));
          } else tally.refused++;
        } finally {
          clearTimeout(timer);
        }
      }
    }),
  );
  await Promise.all(clients.map((c) => c.client.close().catch(() => {})));

  const ready = await fetch(new URL('/readyz', server.url));
  const body = (await ready.json()) as { status: string; reason?: string };
  console.log(`pgbouncer round robin (transaction mode): ${JSON.stringify(tally)}; /readyz ${ready.status}`);
  recordFigures({
    scenario: 'PgBouncer (transaction mode, round robin) the start-up probe missed',
    attempted: CALLS,
    served: tally.right,
    refused: tally.refused,
    hung: tally.hung,
    other: {
      'wrong answers': tally.wrong,
      'valid tokens refused': tally.unauthorized,
      '/readyz': ready.status,
    },
  });
  expect(samples).toEqual([]);
  expect({ wrong: tally.wrong, unauthorized: tally.unauthorized, hung: tally.hung }).toEqual({
    wrong: 0,
    unauthorized: 0,
    hung: 0,
  });
  // The calls that moved were retried on fresh lanes; their lanes moved again, so the server says why.
  expect(ready.status).toBe(503);
  expect(body).toEqual({ status: 'unavailable', server: 'customer', reason: SESSIONS_SHARED });
  expect(server.output()).toContain("a read lane's session moved");
}, 180_000);
