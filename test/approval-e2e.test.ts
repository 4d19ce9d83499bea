import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

let db: TestDatabase;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  [admin, consoleServer] = await Promise.all([
    spawnServer('admin', (await db.as('admin')).url),
    spawnServer('console', (await db.as('console')).url),
  ]);
  browser = await chromium.launch(chromiumLaunchOptions());
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), consoleServer?.stop()]);
  await db.drop();
});

it('send_invoice on the real admin server: pending → approved in the console in Chromium → executed exactly once, all audited', async () => {
  const [draft] = await db.sql<{ number: string; email: string }[]>`
    select i.number, c.email from invoices i join customers c on c.id = i.customer_id
    where i.status = 'draft' order by i.number limit 1`;
  const token = await issueTestToken(db.sql, adminServer, { label: 'Claude Desktop (billing team)' });
  const client = await connectTestClient(admin.url, token, 'e2e');

  const pending = await client.callTool({
    name: 'send_invoice',
    arguments: { invoice_number: draft!.number },
  });
  const result = pending.structuredContent as {
    status: string;
    approval_id: string;
    preview: { text: string; source: string; untrusted: true };
    note: string;
  };
  expect(pending.isError).toBeFalsy();
  expect(result.status).toBe('pending_approval');
  expect(result.note).toContain('Nothing has been sent');
  expect(result.preview.text).toContain(draft!.email);
  expect(result.preview.source).toBe(`approval ${result.approval_id} preview`);
  expect((await db.sql`select status from invoices where number = ${draft!.number}`)[0]!.status).toBe(
    'draft',
  );

  const { token: approver } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Jonas (finance)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(10_000);
  await page.goto(consoleServer.url.origin);
  await page.getByLabel('Approver token').fill(approver);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  await page.getByRole('link', { name: `Review and decide ${result.approval_id}` }).click();
  await page.getByLabel('Reason').fill('Draft checked against the order; send it.');
  await page.getByRole('button', { name: 'Approve and run' }).click();
  await page.getByRole('status').waitFor();

  let status: { status?: string; result?: unknown } = {};
  for (let i = 0; i < 50 && status.status !== 'executed'; i++) {
    const r = await client.callTool({
      name: 'get_approval_status',
      arguments: { approval_id: result.approval_id },
    });
    status = r.structuredContent as typeof status;
    if (status.status !== 'executed') await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toMatchObject({
    status: 'executed',
    result: { invoice_number: draft!.number, status: 'open', email: draft!.email },
  });
  await client.close();
  await page.close();

  const [invoice] =
    await db.sql`select status, sent_at is not null as sent from invoices where number = ${draft!.number}`;
  expect(invoice).toEqual({ status: 'open', sent: true });
  const mails =
    await db.sql`select payload->>'to' as to from bulkhead_outbox where approval_id = ${result.approval_id}`;
  expect(mails).toEqual([{ to: draft!.email }]);
  const story = await db.sql<{ outcome: string; method: string; token_label: string | null }[]>`
    select outcome, method, token_label from audit_events where approval_id = ${result.approval_id} order by seq`;
  expect(story.map((e) => [e.method, e.outcome])).toEqual([
    ['tools/call', 'pending_approval'],
    ['approvals/decide', 'approved'],
    ['approvals/execute', 'executed'],
  ]);
}, 60_000);
