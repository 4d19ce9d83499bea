import { createLogger } from '@bulkhead/core';
import { startMailCatcher, type MailCatcher } from '@bulkhead/core/mail-catcher';
import { getApproval, startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator';
import { testApprover } from '@bulkhead/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminServer } from './server.ts';
import { startAdmin, type AdminHarness } from './test-client.ts';

// The e-mails answer_ticket and send_invoice build, read where they leave: the outbox
// row a sender reads, and what an SMTP server received from the shipped e-mail deliverer.

let h: AdminHarness;
let executor: ApprovalExecutor;
let catcher: MailCatcher;
beforeAll(async () => {
  h = await startAdmin();
  catcher = await startMailCatcher();
  executor = startApprovalExecutor(adminServer, {
    sql: h.server.sql,
    logger: createLogger({ level: 'silent' }),
    smtp: { url: catcher.url, from: 'billing@bulkhead.test' },
  });
  await executor.ready;
});
afterAll(async () => {
  await executor?.stop();
  await h?.close();
  await catcher?.close();
});

async function approveAndRun(approvalId: string) {
  await (await testApprover(h.db)).decide(approvalId, 'approve');
  await executor.drain();
  return (await getApproval(h.db.sql, approvalId))!;
}

async function outboxEmails(approvalId: string) {
  return h.db.sql<{ id: string; payload: Record<string, unknown>; status: string }[]>`
    select id, payload, status from bulkhead_outbox where approval_id = ${approvalId} and kind = 'email'`;
}

/** What the SMTP server received for this outbox row. */
const delivered = (outboxId: string) => catcher.mails.filter((m) => m.outboxId === Number(outboxId));

describe('answer_ticket e-mail', () => {
  it('keeps a customer subject carrying CR/LF and a Bcc line on one subject line', async () => {
    await h.db.sql`
      insert into tickets (key, customer_id, subject)
      values ('T-9801', 'C-1001', ${'Scanner broken\r\nBcc: attacker@evil.example\r\n\r\nX-Priority: 1\u0007\u0085end'})`;
    const r = await h.call('answer_ticket', { key: 'T-9801', body: 'We replaced the scanner.\nRegards' });
    expect(r.isError).toBe(false);
    const id = (r.structured as { approval_id: string }).approval_id;
    expect(await approveAndRun(id)).toMatchObject({ status: 'executed' });

    const subject = 'Re: [T-9801] Scanner broken Bcc: attacker@evil.example X-Priority: 1 end';
    const rows = await outboxEmails(id);
    expect(rows.map((row) => [row.payload, row.status])).toEqual([
      [
        {
          to: 'accounts@hartmann-maschinenbau.de',
          subject,
          text: 'We replaced the scanner.\nRegards',
          ticket_key: 'T-9801',
          customer_id: 'C-1001',
        },
        'delivered',
      ],
    ]);
    // One recipient in the envelope, the whole subject on its one line: the Bcc line added no one.
    expect(delivered(rows[0]!.id)).toEqual([
      expect.objectContaining({
        from: 'billing@bulkhead.test',
        to: ['accounts@hartmann-maschinenbau.de'],
        subject,
        // A message's last line ends with a line break on the wire.
        text: 'We replaced the scanner.\nRegards\n',
        approvalId: id,
      }),
    ]);
  });

  it('cuts a subject longer than a header should carry, at 200 characters with "…"', async () => {
    await h.db
      .sql`insert into tickets (key, customer_id, subject) values ('T-9802', 'C-1001', ${'ä'.repeat(400)})`;
    const r = await h.call('answer_ticket', { key: 'T-9802', body: 'Thanks.' });
    const id = (r.structured as { approval_id: string }).approval_id;
    await approveAndRun(id);
    const [row] = await outboxEmails(id);
    expect(row!.payload.subject).toBe(`Re: [T-9802] ${'ä'.repeat(200 - 14)}…`);
  });

  it('refuses before anything is filed when the address on file could add header lines', async () => {
    await h.db.sql`
      insert into customers (id, name, email) values ('C-1950', 'Header Test GmbH', ${'victim@example.com\r\nBcc: attacker@evil.example'})`;
    await h.db.sql`insert into tickets (key, customer_id, subject) values ('T-9803', 'C-1950', 'Hello')`;
    const approvals = async () =>
      (await h.db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_approvals`)[0]!.n;
    const before = await approvals();
    const r = await h.call('answer_ticket', { key: 'T-9803', body: 'Hello back.' });
    expect(r).toEqual({
      isError: true,
      text:
        'the e-mail address on file for customer C-1950 cannot be used (it contains a line break); nothing was done — ' +
        'correct it with update_customer_contact, then call again',
      structured: undefined,
    });
    expect(await approvals()).toBe(before);
  });

  it('fails at execution, posting and sending nothing, when the address turned bad after approval', async () => {
    await h.db
      .sql`insert into customers (id, name, email) values ('C-1951', 'Later Bad AG', 'ok@later-bad.example')`;
    await h.db.sql`insert into tickets (key, customer_id, subject) values ('T-9804', 'C-1951', 'Question')`;
    const r = await h.call('answer_ticket', { key: 'T-9804', body: 'Answer.' });
    const id = (r.structured as { approval_id: string }).approval_id;
    await h.db
      .sql`update customers set email = 'ok@later-bad.example, attacker@evil.example' where id = 'C-1951'`;
    expect(await approveAndRun(id)).toMatchObject({
      status: 'failed',
      failure: 'tool_error',
      error:
        'the e-mail address on file for customer C-1951 cannot be used (it contains a space); nothing was done — ' +
        'correct it with update_customer_contact, then call again',
    });
    expect(await outboxEmails(id)).toEqual([]);
    const answers = await h.db.sql`
      select 1 from ticket_messages where ticket_key = 'T-9804' and author_kind = 'agent'`;
    expect(answers.length).toBe(0);
  });
});

describe('send_invoice e-mail', () => {
  it('refuses an invoice whose customer address would add a recipient', async () => {
    const [invoice] = await h.db.sql<{ number: string; customerId: string }[]>`
      select number, customer_id as "customerId" from invoices where status = 'open' order by number limit 1`;
    await h.db.sql`update customers set email = ${'billing@example.com\nCc: attacker@evil.example'}
      where id = ${invoice!.customerId}`;
    const r = await h.call('send_invoice', { invoice_number: invoice!.number });
    expect(r).toEqual({
      isError: true,
      text:
        `the e-mail address on file for customer ${invoice!.customerId} cannot be used (it contains a line break); nothing was done — ` +
        'correct it with update_customer_contact, then call again',
      structured: undefined,
    });
  });
});
