import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Client } from '@modelcontextprotocol/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { customerServer } from '../servers/customer/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

// Issue 10, point 6: the console shows what will run, character for character. The requests are made
// through the shipped servers (a customer opens a ticket, the admin assistant answers it and changes a
// contact), and a real Chromium reads them from a real console process.

let db: TestDatabase;
let admin: ServerProcess;
let customer: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  [admin, customer, consoleServer] = await Promise.all([
    spawnServer('admin', (await db.as('admin')).url),
    spawnServer('customer', (await db.as('customer')).url),
    spawnServer('console', (await db.as('console')).url),
  ]);
  browser = await chromium.launch(chromiumLaunchOptions());
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), customer?.stop(), consoleServer?.stop()]);
  await db.drop();
});

/** A 5,000-character answer, in paragraphs, whose last sentence says it is the last. */
const ANSWER = (() => {
  const paragraph =
    'Thank you for writing to us. We have checked the invoice and the payment you sent; both match, ' +
    'and nothing more is owed. If your bank shows a second debit, please send us its date.\n\n';
  const last = 'This is the last sentence of the answer.';
  const fill = 5000 - last.length;
  return paragraph.repeat(Math.ceil(fill / paragraph.length)).slice(0, fill) + last;
})();

async function call(client: Client, name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  // open_ticket has no output schema: its result is the JSON text.
  const content = result.content as { type: string; text: string }[];
  return (result.structuredContent ?? JSON.parse(content[0]!.text)) as Record<string, unknown>;
}

async function signIn(page: Page) {
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Jonas (support lead)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  await page.goto(consoleServer.url.origin);
  await page.getByLabel('Approver token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
}

it('in Chromium, the console shows [U+202E], flags a Cyrillic letter in an e-mail address and shows the full answer body', async () => {
  expect(ANSWER).toHaveLength(5000);
  const [owner] = await db.sql<
    { id: string; name: string; email: string }[]
  >`select id, name, email from customers order by id limit 1`;
  const [other] = await db.sql<{ id: string; email: string }[]>`
    select id, email from customers where id <> ${owner!.id} and split_part(email, '@', 1) like '%a%'
    order by id limit 1`;

  // A customer opens a ticket whose subject carries a right-to-left override.
  const customerToken = await issueTestToken(db.sql, customerServer, {
    customerId: owner!.id,
    label: 'Portal assistant',
  });
  const portal = await connectTestClient(customer.url, customerToken, 'portal');
  const subject = 'Refund request \u202e!tnegru';
  const { key } = (await call(portal, 'open_ticket', {
    subject,
    category: 'billing',
    body: 'I was charged twice.',
  })) as { key: string };
  await portal.close();

  // The admin assistant answers it (5,000 characters) and changes another customer's e-mail address
  // to one that differs from the stored one only by a Cyrillic а (U+0430).
  const adminToken = await issueTestToken(db.sql, adminServer, { label: 'Claude Desktop (support)' });
  const assistant = await connectTestClient(admin.url, adminToken, 'assistant');
  const answer = await call(assistant, 'answer_ticket', { key, body: ANSWER });
  const spoofed = other!.email.replace('a', '\u0430');
  const contact = await call(assistant, 'update_customer_contact', {
    customer_id: other!.id,
    email: spoofed,
  });
  expect([answer.status, contact.status]).toEqual(['pending_approval', 'pending_approval']);
  const answerId = answer.approval_id as string;
  const contactId = contact.approval_id as string;

  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.setDefaultTimeout(10_000);
  await signIn(page);
  const answerCard = page.locator('article', { has: page.locator(`#p-${answerId}`) });
  expect(await answerCard.locator('h2 mark.hidden').allTextContents()).toEqual(['[U+202E]']);
  expect(await answerCard.getByRole('note').textContent()).toBe(
    'Look closely: this request holds 1 hidden character, marked in it; the detail page explains each mark. What you read may not be what will run.',
  );
  await page.screenshot({ path: '/tmp/bulkhead-console-preview-pending.png', fullPage: true });

  // The answer: the subject's override is shown, not applied, and the whole body is on the page.
  await page.goto(`${consoleServer.url.origin}/approvals/${answerId}`);
  const preview = page.locator('p.preview');
  expect(await preview.locator('mark.hidden').allTextContents()).toEqual(['[U+202E]']);
  expect(await preview.textContent()).toContain(
    `of "${owner!.name}" (${owner!.id}), visible to the customer, set it to pending, and e-mail the answer to ` +
      `"${owner!.email}" with the subject "Re: [${key}] Refund request [U+202E]!tnegru"`,
  );
  // The values the answer will use are on the page too, the subject's override shown, not applied.
  const values = page.getByRole('table', { name: `The values ${answerId} was filed with` });
  expect(
    await values
      .getByRole('row', { name: /^recipient/ })
      .locator('div.text')
      .textContent(),
  ).toBe(owner!.email);
  expect(
    await values
      .getByRole('row', { name: /^subject/ })
      .locator('div.text mark.hidden')
      .allTextContents(),
  ).toEqual(['[U+202E]']);
  const args = page.getByRole('table', { name: `The arguments of ${answerId}, as they will run` });
  const body = args.getByRole('row', { name: /^body/ }).locator('div.text');
  expect(await body.textContent()).toBe(ANSWER);
  expect(await body.innerText()).toBe(ANSWER);
  expect(await args.getByRole('row', { name: /^body/ }).locator('p.hint').textContent()).toBe(
    'Text, 5,000 characters, in full.',
  );
  expect(await args.getByRole('row', { name: /^key/ }).locator('div.text').textContent()).toBe(key);
  await page.screenshot({ path: '/tmp/bulkhead-console-preview-answer-top.png' });
  await page.screenshot({ path: '/tmp/bulkhead-console-preview-answer.png', fullPage: true });

  // The contact change: the address that looks like the stored one is flagged, its odd letter marked.
  await page.goto(`${consoleServer.url.origin}/approvals/${contactId}`);
  const email = page
    .getByRole('table', { name: `The arguments of ${contactId}, as they will run` })
    .getByRole('row', { name: /^email/ });
  expect(await email.locator('div.text').textContent()).toBe(spoofed);
  expect(await email.locator('mark.mixed .odd').allTextContents()).toEqual(['\u0430']);
  expect(await email.locator('ul.findings li').allTextContents()).toEqual([
    `“${spoofed}” mixes Latin and Cyrillic letters: \u0430 (U+0430) is Cyrillic. Letters of different scripts can look alike; this is not the Latin word it may look like.`,
  ]);
  expect(await page.locator('p.preview mark.mixed .odd').allTextContents()).toEqual(['\u0430']);
  expect(await page.getByRole('note').textContent()).toBe(
    // In the preview, the arguments and the values the change will write.
    'Look closely: this request holds 3 words mixing scripts, marked below, each with a note. What you read may not be what will run.',
  );
  await page.screenshot({ path: '/tmp/bulkhead-console-preview-contact.png', fullPage: true });

  // Approving the answer sends exactly the text that was shown.
  await page.goto(`${consoleServer.url.origin}/approvals/${answerId}`);
  await page.getByRole('button', { name: 'Approve and run' }).click();
  await page.getByRole('status').waitFor();
  let status: { status?: string } = {};
  for (let i = 0; i < 50 && status.status !== 'executed'; i++) {
    status = await call(assistant, 'get_approval_status', { approval_id: answerId });
    if (status.status !== 'executed') await new Promise((r) => setTimeout(r, 100));
  }
  expect(status.status).toBe('executed');
  await assistant.close();
  const mails = await db.sql<{ text: string; subject: string }[]>`
    select payload->>'text' as text, payload->>'subject' as subject from bulkhead_outbox
    where approval_id = ${answerId} and kind = 'email'`;
  expect(mails).toEqual([{ text: ANSWER, subject: `Re: [${key}] ${subject}` }]);
  await page.close();
}, 90_000);
