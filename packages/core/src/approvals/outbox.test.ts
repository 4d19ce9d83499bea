import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTestClient, issueTestToken, startTestServer, testApprover } from '../testing/index.ts';
import { FIXTURE_EFFECTS_DDL, fixtureServer } from '../testing/fixtures/gated-server.ts';
import {
  DEFAULT_RETRY,
  dispatchOutbox,
  getApproval,
  startApprovalExecutor,
  type Deliverer,
} from './index.ts';

let db: TestDatabase;
const logger = pino({ level: 'silent' });

// A webhook receiver that takes every request and never answers, as a stuck endpoint does.
const held: IncomingMessage[] = [];
const receiver = createHttpServer((req) => {
  held.push(req);
});

beforeAll(async () => {
  db = await createTestDatabase();
  await db.as('gate-fixture');
  await db.sql.unsafe(FIXTURE_EFFECTS_DDL);
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise((resolve) => receiver.close(resolve));
  await db.drop();
});

/** Waits until `ok` holds (no deadline of its own: a state never reached times the test out). */
async function until(ok: () => Promise<boolean> | boolean): Promise<void> {
  while (!(await ok())) await sleep(20);
}

/** Attempts recorded for the delivery of one approval's notification. */
async function attemptsOf(approvalId: string) {
  return db.sql<{ attempt: number; ok: boolean; error: string }[]>`
    select a.attempt, a.ok, a.error from bulkhead_outbox_attempts a
    join bulkhead_outbox o on o.id = a.outbox_id where o.approval_id = ${approvalId}`;
}

async function openTransactions(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and state like 'idle in transaction%'`;
  return row!.n;
}

describe('the outbox beside the approved actions', () => {
  it('runs an approval decided now while the webhook receiver hangs, and holds no transaction during a delivery', async () => {
    const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const server = await startTestServer(fixtureServer, { db, approvalWebhookUrl: webhookUrl });
    const executor = startApprovalExecutor(fixtureServer, {
      sql: server.sql,
      logger,
      webhookUrl,
      sweepIntervalMs: 60_000,
    });
    await executor.ready;
    const client = await connectTestClient(server.url, await issueTestToken(db.sql, fixtureServer));
    const ids: string[] = [];
    for (const label of ['first', 'second', 'third', 'fourth']) {
      const r = await client.callTool({ name: 'record_effect', arguments: { label } });
      ids.push((r.structuredContent as { approval_id: string }).approval_id);
    }
    await client.close();
    await server.close();

    // The first notification is with the receiver, which does not answer (for 10 s, the webhook's limit).
    await until(() => held.length > 0);
    expect(held).toHaveLength(1);
    const [first] = await db.sql<{ attempts: number; status: string; leased: boolean }[]>`
      select attempts, status, next_attempt_at > now() + interval '30 seconds' as leased
      from bulkhead_outbox where approval_id = ${ids[0]!}`;
    expect(first).toEqual({ attempts: 1, status: 'pending', leased: true });
    expect(await openTransactions()).toBe(0);

    await (await testApprover(db)).decide(ids[3]!, 'approve');
    await until(async () => (await getApproval(db.sql, ids[3]!))?.status === 'executed');
    // It ran while the first delivery still hung: no attempt of it is recorded yet (one ends only when the
    // receiver answers, the webhook's limit passes or the executor stops), and no other delivery began.
    expect(await attemptsOf(ids[0]!)).toEqual([]);
    expect(held).toHaveLength(1);

    // Stopping interrupts the hanging delivery (rather than waiting for the webhook's limit): recorded as
    // interrupted, and due again at once for the next start.
    await executor.stop();
    expect(await attemptsOf(ids[0]!)).toEqual([
      {
        attempt: 1,
        ok: false,
        error: expect.stringMatching(
          /^interrupted: the server stopped during the delivery \(webhook unreachable: /,
        ),
      },
    ]);
    const [after] = await db.sql<{ status: string; due: boolean }[]>`
      select status, next_attempt_at <= now() as due from bulkhead_outbox where approval_id = ${ids[0]!}`;
    expect(after).toEqual({ status: 'pending', due: true });
  });
});

describe('dispatchOutbox', () => {
  async function queue(server: string, n: number): Promise<void> {
    for (let i = 0; i < n; i++)
      await db.sql`
        insert into bulkhead_outbox (server, kind, payload)
        values (${server}, 'email', ${db.sql.json({ to: `c${i}@example.test`, subject: `n${i}` })})`;
  }

  it('delivers at most `max` rows a call and says when more are due', async () => {
    await queue('cap-test', 3);
    const deliverers = { email: async () => {} };
    expect(await dispatchOutbox(db.sql, 'cap-test', deliverers, logger, DEFAULT_RETRY, { max: 2 })).toEqual({
      handled: 2,
      more: true,
      nextDueAt: expect.any(Date),
    });
    expect(await dispatchOutbox(db.sql, 'cap-test', deliverers, logger, DEFAULT_RETRY, { max: 2 })).toEqual({
      handled: 1,
      more: false,
      nextDueAt: null,
    });
    const rows = await db.sql`select status, attempts from bulkhead_outbox where server = 'cap-test'`;
    expect(rows).toEqual(Array(3).fill({ status: 'delivered', attempts: 1 }));
  });

  it('lets a dispatcher whose lease lapsed mid-delivery not overwrite the newer attempt', async () => {
    await queue('lease-test', 1);
    const calls: number[] = [];
    // The first delivery answers only when the test lets it: its lease lapses while it is still out.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slowThenFast: Deliverer = async (item) => {
      calls.push(item.attempt);
      if (item.attempt === 1) {
        await answered;
        throw new Error('receiver answered too late');
      }
    };
    const options = { leaseMs: 60_000 };
    const slow = dispatchOutbox(
      db.sql,
      'lease-test',
      { email: slowThenFast },
      logger,
      DEFAULT_RETRY,
      options,
    );
    await until(() => calls.length === 1);
    // Leased for the lease's length: a second dispatcher finds nothing due.
    const [lease] = await db.sql<{ leased: boolean }[]>`
      select next_attempt_at > now() + interval '59 seconds' as leased from bulkhead_outbox where server = 'lease-test'`;
    expect(lease).toEqual({ leased: true });
    expect(
      (await dispatchOutbox(db.sql, 'lease-test', { email: slowThenFast }, logger, DEFAULT_RETRY, options))
        .handled,
    ).toBe(0);
    // The lease lapses (its end is now): the row is claimed again and delivered.
    await db.sql`update bulkhead_outbox set next_attempt_at = now() where server = 'lease-test'`;
    expect(
      (await dispatchOutbox(db.sql, 'lease-test', { email: slowThenFast }, logger, DEFAULT_RETRY, options))
        .handled,
    ).toBe(1);
    // Only now does the first delivery come back, failed: it must not overwrite the delivered row.
    answer();
    await slow;
    expect(calls).toEqual([1, 2]);
    const [row] =
      await db.sql`select status, attempts, last_error from bulkhead_outbox where server = 'lease-test'`;
    expect(row).toEqual({ status: 'delivered', attempts: 2, last_error: null });
    const attempts = await db.sql`
      select attempt, ok, error from bulkhead_outbox_attempts a join bulkhead_outbox o on o.id = a.outbox_id
      where o.server = 'lease-test' order by a.id`;
    expect(attempts).toEqual([
      { attempt: 2, ok: true, error: null },
      { attempt: 1, ok: false, error: 'receiver answered too late' },
    ]);
  });
});
