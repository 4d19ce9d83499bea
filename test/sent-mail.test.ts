import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions } from '@bulkhead/core/testing';
import { openDatabase, type Database } from '@bulkhead/db';
import { chromium } from 'playwright-core';
import { afterAll, expect, it } from 'vitest';
import { startStack, type StartedStack } from './helpers.ts';

// Issue 25: with `pnpm start`, an approved send_invoice really leaves over SMTP, reaches the mail
// catcher that start runs, and shows on the console's Sent mail page — seen in a real browser.

const OFFSET = 1300;
let dataDir = '';
let stack: StartedStack | undefined;
let db: Database | undefined;
afterAll(async () => {
  await db?.close();
  if (stack && stack.child.exitCode === null) {
    const exited = new Promise((resolve) => stack!.child.once('exit', resolve));
    stack.child.kill('SIGINT');
    await exited;
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

it('pnpm start: an approved send_invoice arrives at the local mail catcher and shows under Sent mail', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-sent-mail-'));
  stack = await startStack(dataDir, OFFSET);
  const out = stack.stdout();
  expect(out).toMatch(/^ {2}mail catcher +smtp:\/\/127\.0\.0\.1:\d+ /m);
  const adminToken = /^ {2}admin +(bh_admin_\S+)$/m.exec(out)?.[1];
  expect(adminToken).toBeDefined();

  // The operator's side, on the database start runs: an open invoice to send and an approver token.
  db = await openDatabase({ dataDir, applicationName: 'sent-mail-test' });
  const [invoice] = await db.sql<{ number: string; email: string; customer: string }[]>`
    select i.number, c.email, c.id as customer from invoices i join customers c on c.id = i.customer_id
    where i.status = 'open' order by i.number limit 1`;
  const { token: approverToken } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Ana Berg (finance)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });

  const client = new Client(
    { name: 'sent-mail-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${3101 + OFFSET}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${adminToken}` } },
    }),
  );
  const pending = await client.callTool({
    name: 'send_invoice',
    arguments: { invoice_number: invoice!.number },
  });
  await client.close();
  const id = (pending.structuredContent as { approval_id: string }).approval_id;
  expect(id).toMatch(/^ap_/);

  const browser = await chromium.launch(chromiumLaunchOptions());
  try {
    const page = await (await browser.newContext({ viewport: { width: 1100, height: 900 } })).newPage();
    page.setDefaultTimeout(10_000);
    const consoleUrl = `http://127.0.0.1:${3100 + OFFSET}`;
    await page.goto(consoleUrl);
    await page.getByLabel('Approver token').fill(approverToken);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
    await page.goto(`${consoleUrl}/approvals/${id}`);
    await page.getByRole('button', { name: 'Approve and run' }).click();
    await page.getByRole('status').waitFor();

    // Delivered means the catcher answered 250 to the admin server's SMTP client; wait on that row.
    const started = Date.now();
    const delivered = async () =>
      (
        await db!.sql<{ status: string }[]>`
        select status from bulkhead_outbox where approval_id = ${id} and kind = 'email'`
      ).map((r) => r.status);
    while ((await delivered()).join() !== 'delivered' && Date.now() - started < 30_000) await sleep(100);
    expect(await delivered()).toEqual(['delivered']);
    console.log(`approved send_invoice: decision to delivered over SMTP in ${Date.now() - started} ms`);

    await page.getByRole('link', { name: 'Sent mail' }).click();
    await page.getByRole('heading', { name: 'Sent mail', level: 1 }).waitFor();
    const mail = page.getByRole('article', {
      name: `E-mail to ${invoice!.email}: Invoice ${invoice!.number}`,
    });
    expect(await mail.count()).toBe(1);
    expect(await mail.getByRole('definition').allTextContents()).toEqual([
      invoice!.email,
      'admin@bulkhead.test',
      expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}/),
      id,
    ]);
    expect(await mail.locator('.text').textContent()).toContain(
      `please find invoice ${invoice!.number} over €`,
    );
    await mail.getByRole('link', { name: id }).click();
    expect(new URL(page.url()).pathname).toBe(`/approvals/${id}`);
    await page.goBack();
    await page.screenshot({ path: '/tmp/bulkhead-console-sent-mail.png', fullPage: true });
  } finally {
    await browser.close();
  }
}, 300_000);
