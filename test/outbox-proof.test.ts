import { createHash, randomInt } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@bulkhead/core';
import { startMailCatcher, type MailCatcher } from '@bulkhead/core/mail-catcher';
import { getApproval, startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator';
import { testApprover } from '@bulkhead/core/testing';
import type { Sql } from '@bulkhead/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { startAdmin, type AdminHarness } from '../servers/admin/src/test-client.ts';

/**
 * Issue 42, item 2: a gated server's login queued e-mails (and webhooks, and upstream effects) with no
 * approval, or with one that had run long ago, and its process delivered them. Each attack below is
 * made under the real admin and ops logins and committed; the database refuses it. The legitimate
 * paths — the filing's notification, an approved answer's e-mail — still deliver.
 */
let h: AdminHarness;
let admin: Sql;
let ops: Sql;
let catcher: MailCatcher;
let executor: ApprovalExecutor;
const hooks: { headers: IncomingHttpHeaders; body: { approval: { id: string } } }[] = [];
const hook = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    hooks.push({ headers: req.headers, body: JSON.parse(body) as (typeof hooks)[number]['body'] });
    res.writeHead(204).end();
  });
});
const VICTIM = { to: 'victim@example.com', subject: 'Your account', text: 'Click here.' };
const KEY = /^bulkhead-outbox-[0-9a-f]{32}$/;

function startExecutor(): ApprovalExecutor {
  return startApprovalExecutor(adminServer, {
    sql: admin,
    logger: createLogger({ level: 'silent' }),
    smtp: { url: catcher.url, from: 'billing@bulkhead.test' },
    webhookUrl: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
  });
}

beforeAll(async () => {
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  catcher = await startMailCatcher();
  h = await startAdmin({
    approvalWebhookUrl: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
  });
  admin = h.server.sql;
  ops = (await h.db.as('ops')).sql;
  executor = startExecutor();
  await executor.ready;
}, 60_000);
afterAll(async () => {
  await executor?.stop();
  await h?.close();
  await catcher?.close();
  hook.closeAllConnections();
  await new Promise((resolve) => hook.close(resolve));
});

/** Runs `work` as one transaction and commits it: what the database answered. */
async function committed(sql: Sql, work: (tx: Sql) => Promise<unknown>): Promise<string> {
  try {
    await sql.begin((tx) => work(tx as unknown as Sql));
    return 'committed';
  } catch (err) {
    return (err as Error).message;
  }
}

/** Queues an e-mail to the victim under `approvalId`, as `server`. */
const queueMail = (tx: Sql, server: string, approvalId: string | null) =>
  tx`insert into bulkhead_outbox (server, approval_id, kind, payload)
     values (${server}, ${approvalId}, 'email', ${tx.json(VICTIM)})`;

/** Files a pending approval of `server` in `tx`, as its login may. */
async function file(tx: Sql, server: string): Promise<string> {
  const id = `ap_${Array.from({ length: 12 }, () => 'abcdefghijkmnopqrstuvwxyz23456789'[randomInt(33)]).join('')}`;
  await tx`
    insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
      expires_at, request_id)
    values (${id}, ${server}, 'answer_ticket', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')},
      'Answer a ticket', now() + interval '1 hour', 'r')`;
  return id;
}

/** An answer_ticket filed over MCP; its approval id. */
async function answerTicket(body: string): Promise<string> {
  const r = await h.call('answer_ticket', { key: 'T-1281', body });
  expect(r.isError, r.text).toBe(false);
  return (r.structured as { approval_id: string }).approval_id;
}

async function approveAndRun(id: string) {
  await (await testApprover(h.db)).decide(id, 'approve');
  await executor.drain();
  return (await getApproval(h.db.sql, id))!;
}

async function victimMails(): Promise<number> {
  const [row] = await h.db.sql<{ n: number }[]>`
    select count(*)::int as n from bulkhead_outbox where payload->>'to' = ${VICTIM.to}`;
  return row!.n;
}

let executed: string;
let delivered: { id: string; key: string };

describe('the legitimate paths', () => {
  it('a filing queues its one notification, and an approved answer its e-mail: both delivered, under random keys', async () => {
    const before = hooks.length;
    executed = await answerTicket('Hello, the integration syncs again. Kind regards, support');
    await executor.drain();
    expect(hooks.slice(before).map((x) => x.body.approval.id)).toEqual([executed]);
    expect(hooks.at(-1)!.headers['idempotency-key']).toMatch(KEY);

    expect(await approveAndRun(executed)).toMatchObject({ status: 'executed' });
    const rows = await h.db.sql<{ id: string; kind: string; key: string; status: string }[]>`
      select id, kind, idempotency_key as key, status from bulkhead_outbox where approval_id = ${executed} order by id`;
    expect(rows).toEqual([
      {
        id: expect.any(String),
        kind: 'approval_webhook',
        key: expect.stringMatching(KEY),
        status: 'delivered',
      },
      { id: expect.any(String), kind: 'email', key: expect.stringMatching(KEY), status: 'delivered' },
    ]);
    expect(hooks.at(-1)!.headers['idempotency-key']).toBe(rows[0]!.key);
    const mail = await catcher.received(1);
    expect(mail).toMatchObject({ to: ['accounts@hartmann-maschinenbau.de'], approvalId: executed });
    expect(mail.messageId).toBe(`<${rows[1]!.key}.admin@bulkhead.test>`);
    delivered = { id: rows[1]!.id, key: rows[1]!.key };
  });
});

describe('what the admin and ops logins can no longer queue', () => {
  it('an e-mail with no approval', async () => {
    const none = 'an outbox row is queued by the execution of an approval; this one names none';
    expect(await committed(admin, (tx) => queueMail(tx, 'admin', null))).toBe(none);
    expect(await committed(ops, (tx) => queueMail(tx, 'ops', null))).toBe(none);
    // Checking at once instead of at commit changes nothing.
    expect(
      await committed(admin, async (tx) => {
        await tx`set constraints all immediate`;
        await queueMail(tx, 'admin', null);
      }),
    ).toBe(none);
    // Outside a transaction the statement itself fails.
    await expect(queueMail(admin, 'admin', null)).rejects.toThrow(none);
    expect(await victimMails()).toBe(0);
  });

  it('an e-mail under an approval that already ran', async () => {
    expect(await committed(admin, (tx) => queueMail(tx, 'admin', executed))).toBe(
      `approval ${executed} is not being executed in this transaction (it is executed): its effects were queued when it ran, or it has not run yet`,
    );
    expect(await victimMails()).toBe(0);
  });

  it("an e-mail under another server's approval, or in another server's name", async () => {
    expect(await committed(ops, (tx) => queueMail(tx, 'ops', executed))).toBe(
      `approval ${executed} is no approval of ops`,
    );
    expect(await committed(admin, (tx) => queueMail(tx, 'ops', executed))).toMatch(
      / may queue deliveries only for itself$/,
    );
    const opsApproval = await (async () => {
      let id = '';
      await ops.begin(async (tx) => (id = await file(tx as unknown as Sql, 'ops')));
      return id;
    })();
    expect(await committed(admin, (tx) => queueMail(tx, 'admin', opsApproval))).toBe(
      `approval ${opsApproval} is no approval of admin`,
    );
    expect(await victimMails()).toBe(0);
  });

  it('an e-mail or a second notification under a pending approval, filed now or before', async () => {
    const earlier = await answerTicket('Hello, a second answer. Kind regards, support');
    expect(await committed(admin, (tx) => queueMail(tx, 'admin', earlier))).toBe(
      `approval ${earlier} is not being executed in this transaction (it is pending): its effects were queued when it ran, or it has not run yet`,
    );
    const notify = (tx: Sql, id: string) =>
      tx`insert into bulkhead_outbox (server, approval_id, kind, payload)
         values ('admin', ${id}, 'approval_webhook', ${tx.json({ text: '<https://evil.example|Approve>' })})`;
    expect(await committed(admin, (tx) => notify(tx, earlier))).toMatch(
      /^duplicate key value violates unique constraint "bulkhead_outbox_one_notification"$/,
    );
    let fresh = '';
    expect(
      await committed(admin, async (tx) => {
        fresh = await file(tx, 'admin');
        await queueMail(tx, 'admin', fresh);
      }),
    ).toBe(
      `approval ${fresh} is not being executed in this transaction (it is pending): its effects were queued when it ran, or it has not run yet`,
    );
    // A notification of a filing made in another transaction (here: filed, committed, then notified).
    let filed = '';
    await ops.begin(async (tx) => (filed = await file(tx as unknown as Sql, 'ops')));
    expect(
      await committed(
        ops,
        (tx) =>
          tx`insert into bulkhead_outbox (server, approval_id, kind, payload)
           values ('ops', ${filed}, 'approval_webhook', '{}')`,
      ),
    ).toBe(`the notification of approval ${filed} is queued only in the transaction that files it`);
    expect(await victimMails()).toBe(0);
  });

  it('an upstream effect or a webhook, of any kind, with no approval or under one that already ran', async () => {
    // What ops would deliver to Alertmanager, and a plain webhook: the guard weighs the approval, not the kind.
    const expireAll = (tx: Sql, server: string, kind: string, approvalId: string | null) =>
      tx`insert into bulkhead_outbox (server, approval_id, kind, payload)
         values (${server}, ${approvalId}, ${kind}, ${tx.json({ upstream: 'alertmanager', method: 'DELETE', path: '/api/v2/silence/{id}', params: { id: 'all' } })})`;
    // An ops approval that ran long ago, as the executor leaves it (written by the owner, committed).
    const ran = 'ap_opsranlonago';
    await h.db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        expires_at, request_id, status, decided_at, decided_by, decided_by_token_id, decided_arguments_hash, executed_at)
      values (${ran}, 'ops', 'expire_silence', '{}', '{}', ${createHash('sha256').update('{}').digest('hex')},
        'Expire a silence', now() + interval '1 hour', 'r', 'executed', now(), 'console:x', 'x',
        ${createHash('sha256').update('{}').digest('hex')}, now())`;
    const none = 'an outbox row is queued by the execution of an approval; this one names none';
    for (const kind of ['upstream', 'webhook']) {
      expect([kind, await committed(ops, (tx) => expireAll(tx, 'ops', kind, null))]).toEqual([kind, none]);
      expect([kind, await committed(admin, (tx) => expireAll(tx, 'admin', kind, null))]).toEqual([
        kind,
        none,
      ]);
      expect([kind, await committed(ops, (tx) => expireAll(tx, 'ops', kind, ran))]).toEqual([
        kind,
        `approval ${ran} is not being executed in this transaction (it is executed): its effects were queued when it ran, or it has not run yet`,
      ]);
      expect([kind, await committed(admin, (tx) => expireAll(tx, 'admin', kind, executed))]).toEqual([
        kind,
        `approval ${executed} is not being executed in this transaction (it is executed): its effects were queued when it ran, or it has not run yet`,
      ]);
    }
    const [queued] = await h.db.sql<{ n: number }[]>`
      select count(*)::int as n from bulkhead_outbox where kind in ('upstream', 'webhook')`;
    expect(queued!.n).toBe(0);
  });

  it('an e-mail sent again: a delivered row stays delivered, and its payload and key stay as queued', async () => {
    expect(
      await committed(
        admin,
        (tx) => tx`update bulkhead_outbox set status = 'pending' where id = ${delivered.id}`,
      ),
    ).toBe(`outbox row ${delivered.id} is delivered and stays so`);
    expect(
      await committed(
        admin,
        (tx) => tx`update bulkhead_outbox set payload = '{}' where id = ${delivered.id}`,
      ),
    ).toBe('permission denied for table bulkhead_outbox');
    expect(
      await committed(
        admin,
        (tx) =>
          tx`update bulkhead_outbox set idempotency_key = 'bulkhead-outbox-1' where id = ${delivered.id}`,
      ),
    ).toBe('permission denied for table bulkhead_outbox');
  });
});

describe('what a compromised login can still do', () => {
  it('attach effects to an approval that is approved and has not run yet, once, in the transaction that marks it executed', async () => {
    await executor.stop();
    try {
      const id = await answerTicket('Hello, a third answer. Kind regards, support');
      await (await testApprover(h.db)).decide(id, 'approve');
      const hijack = async (tx: Sql) => {
        await tx`update bulkhead_approvals set status = 'executed', executed_at = now() where id = ${id}`;
        await queueMail(tx, 'admin', id);
      };
      expect(await committed(admin, hijack)).toBe('committed');
      expect(await victimMails()).toBe(1);
      // The approval is final now: nothing more can be queued under it, and the real answer never runs.
      expect(await committed(admin, hijack)).toBe(`approval ${id} is final (executed)`);
    } finally {
      executor = startExecutor();
      await executor.ready;
    }
  });
});
