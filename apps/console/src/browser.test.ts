import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import {
  getApproval,
  issueToken,
  startApprovalExecutor,
  type ApprovalExecutor,
} from '@bulkhead/core/operator';
import {
  chromiumLaunchOptions,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createConsoleApp, type ConsoleApp } from './app.tsx';

/** A customer-visible e-mail: the kind of action that stops at a gate. */
const sendReminder = defineTool({
  name: 'send_payment_reminder',
  title: 'Send payment reminder',
  description: 'E-mails a payment reminder for an open invoice.',
  scope: 'invoices:write',
  input: z.object({ invoice: z.string().regex(/^R-\d{4}-\d{4}$/), customer_email: z.string() }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  approval: {
    preview: ({ invoice, customer_email }) =>
      `E-mail a payment reminder for invoice ${invoice} to ${customer_email}.`,
  },
  handler: async ({ invoice, customer_email }, ctx) => {
    await ctx.sql`insert into reminders (approval_id, invoice) values (${ctx.approval!.id}, ${invoice})`;
    const outboxId = await ctx.outbox!.enqueue('email', {
      to: customer_email,
      subject: `Reminder: ${invoice}`,
    });
    return { reminded: invoice, outbox_id: outboxId };
  },
});
const billing = createServer({
  name: 'billing-demo',
  version: '1.0.0',
  description: 'A gated server for the browser test.',
  tools: [sendReminder],
});

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let mcp: TestServer;
let executor: ApprovalExecutor;
let consoleApp: ConsoleApp;
let http: ServerType;
let browser: Browser;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`create table reminders (approval_id text not null, invoice text not null)`;
  mcp = await startTestServer(billing, { db, logger });
  await db.sql`grant insert on reminders to bulkhead_billing_demo`;
  executor = startApprovalExecutor(billing, { sql: mcp.sql, logger });
  consoleApp = createConsoleApp({ sql: (await db.as('console')).sql, logger, publicUrl: 'http://127.0.0.1' });
  http = serve({ fetch: consoleApp.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => http.once('listening', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  browser = await chromium.launch(chromiumLaunchOptions());
  await executor.ready;
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => http.close(resolve));
  await consoleApp.close();
  await executor.stop();
  await mcp.close();
  await db.drop();
});

it('a gated call is approved in a real browser and executed exactly once, with the whole story audited', async () => {
  const mcpToken = await issueTestToken(db.sql, billing, { label: 'Claude Desktop (accounts)' });
  const client = new Client(
    { name: 'browser-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(mcp.url, {
      requestInit: { headers: { Authorization: `Bearer ${mcpToken}` } },
    }),
  );
  const pending = await client.callTool({
    name: 'send_payment_reminder',
    arguments: { invoice: 'R-2026-0042', customer_email: 'billing@nordlicht.example' },
  });
  const id = (pending.structuredContent as { approval_id: string }).approval_id;
  const { token: approverToken } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Ana Berg (finance)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });

  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  await page.goto(base);
  expect(new URL(page.url()).pathname).toBe('/login');
  await page.getByLabel('Approver token').fill(mcpToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect
    .poll(() => page.getByRole('alert').textContent())
    .toBe('This token does not open the console: it is unknown, expired, revoked, or not an approver token.');

  await page.getByLabel('Approver token').fill(approverToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  const [session] = (await context.cookies()).filter((c) => c.name === 'bh_session');
  expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/' });
  const card = page.getByRole('article', {
    name: 'E-mail a payment reminder for invoice R-2026-0042 to billing@nordlicht.example.',
  });
  expect(await card.getByText('Claude Desktop (accounts)').count()).toBe(1);
  await page.screenshot({ path: '/tmp/bulkhead-console-pending.png', fullPage: true });

  await card.getByRole('link', { name: `Review and decide ${id}` }).click();
  await page.getByLabel('Reason').fill('Invoice is 30 days overdue; reminder agreed with sales.');
  await page.getByRole('button', { name: 'Approve and run' }).click();
  await page.getByRole('status').waitFor();

  const deadline = Date.now() + 5000;
  let approval = await getApproval(db.sql, id);
  while (approval?.status !== 'executed' && Date.now() < deadline) {
    await sleep(50);
    approval = await getApproval(db.sql, id);
  }
  expect(approval).toMatchObject({
    status: 'executed',
    decidedBy: 'console:Ana Berg (finance)',
    decisionReason: 'Invoice is 30 days overdue; reminder agreed with sales.',
  });
  const reminders = await db.sql`select invoice from reminders where approval_id = ${id}`;
  expect(reminders).toEqual([{ invoice: 'R-2026-0042' }]);

  await page.reload();
  expect(await page.getByText('Approved and executed', { exact: true }).count()).toBe(1);
  const trail = page.getByRole('table', {
    name: 'Every audit event that names this approval, oldest first.',
  });
  expect(await trail.getByRole('row').allTextContents()).toEqual([
    'WhenStepOutcomeBy',
    expect.stringMatching(/tools\/callpending_approvalClaude Desktop \(accounts\)$/),
    expect.stringMatching(/approvals\/decideapprovedconsole:Ana Berg \(finance\)$/),
    expect.stringMatching(/approvals\/executeexecutedClaude Desktop \(accounts\)$/),
  ]);
  await page.screenshot({ path: '/tmp/bulkhead-console-executed.png', fullPage: true });

  const status = await client.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
  await client.close();
  expect(status.structuredContent).toMatchObject({
    status: 'executed',
    decided_by: 'console:Ana Berg (finance)',
    result: { reminded: 'R-2026-0042' },
  });
  const events = await db.sql<{ outcome: string }[]>`
    select outcome from audit_events where approval_id = ${id} order by seq`;
  expect(events.map((e) => e.outcome)).toEqual(['pending_approval', 'approved', 'executed']);
  await context.close();
});
