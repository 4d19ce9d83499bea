import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createAuditWriter } from '@bulkhead/audit';
import { createLogger } from '@bulkhead/core';
import { argumentsHash } from '@bulkhead/core/operator';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approverToken, personSession } from './fixtures/people.ts';
import { serveConsole, type ServedConsole } from './fixtures/served-console.ts';

// The console on a phone, where an approver is when a request comes in: at 390 px wide, every page an
// approver or an operator opens fits the screen, every link of the navigation can be seen and tapped,
// and a request is decided there.

/** Where the screenshots go: beside the package, ignored by git, kept after the run to look at. */
const shots = fileURLToPath(new URL('../test-output/screenshots/', import.meta.url));
const WIDTH = 390;
const SCALE = 2;

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let served: ServedConsole;
let browser: Browser;
let base: string;

/** A request whose values are as long and unbroken as real ones get: an e-mail, an id, nested JSON. */
const LONG = 'ap_phonelongval';
const SHORT = 'ap_phoneshortno';
const EMAIL = 'accounts-payable.department.nordlicht-logistics-international@billing.nordlicht.example';
const args = {
  invoice_number: 'R-2026-0042',
  customer_email: EMAIL,
  idempotency_key: 'f3b9c0e2d7a14b6c8e5f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4',
  lines: [{ sku: 'FREIGHT-EU-PALLET-STANDARD-120X80', amount: { value: 129950, currency: 'EUR' } }],
  note: 'Second reminder.\nPlease pay within 7 days or call us at +49 40 1234567.',
};
const values = {
  customer: { id: 'cus_01HZX8K3Q4M5N6P7R8S9T0V1W2', email: EMAIL },
  invoice: { open_amount: 129950, due: '2026-11-01', status: 'overdue' },
};

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  db = await createTestDatabase();
  served = await serveConsole(db, logger, [
    {
      name: 'admin',
      description: 'admin',
      resource: 'http://127.0.0.1:1/admin/mcp',
      scopes: [],
      customerBound: false,
    },
    {
      name: 'dev-knowledge',
      description: 'the engineering knowledge base, read-only, for assistants in the editor',
      resource: 'http://127.0.0.1:1/dev-knowledge/mcp',
      scopes: ['kb:read'],
      customerBound: false,
    },
  ]);
  ({ base, browser } = served);
  for (const [id, a, v, preview] of [
    [
      LONG,
      args,
      values,
      `E-mail a payment reminder for invoice R-2026-0042 (EUR 1,299.50, 35 days overdue) to ${EMAIL}.`,
    ],
    [SHORT, { invoice_number: 'R-2026-0043' }, null, 'Send invoice R-2026-0043.'],
  ] as const)
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash,
        approved_values, preview, expires_at, request_id, requested_by_label)
      values (${id}, 'admin', 'send_payment_reminder', ${db.sql.json(a)}, ${db.sql.json(a)},
        ${argumentsHash(a)}, ${v === null ? null : db.sql.json(v)}, ${preview}, now() + interval '1 day',
        ${randomUUID()}, 'Claude Desktop (accounts, Hamburg office)')`;
  // Calls for the charts to draw.
  const audit = createAuditWriter(db.sql);
  for (const [tool, outcome] of [
    ['get_invoice', 'ok'],
    ['get_invoice', 'ok'],
    ['send_payment_reminder', 'pending_approval'],
    ['delete_customer', 'forbidden'],
  ] as const)
    await audit.append({
      server: 'admin',
      method: 'tools/call',
      tool,
      outcome,
      tokenLabel: 'Claude Desktop (accounts, Hamburg office)',
      requestId: randomUUID(),
      durationMs: 5,
    });
  await db.sql`
    insert into bulkhead_tool_switches (server, tool, reason, switched_by)
    values ('admin', 'send_payment_reminder', 'The mail relay bounces everything since the DNS change.',
      'console:Ola Nordmann (operations)')`;
  await db.sql`
    insert into bulkhead_caught_mail (mail_from, rcpt_to, subject, body, approval_id)
    values ('billing@bulkhead.example', ${[EMAIL]}, 'Reminder: R-2026-0042',
      ${`Dear customer,\n\nplease pay ${'https://pay.nordlicht.example/invoices/R-2026-0042?token=f3b9c0e2d7a14b6c8e5f0a1b2c3d4e5f'}.`},
      ${LONG})`;
});
afterAll(async () => {
  await served?.close();
  await db.drop();
});

/** A PNG's dimensions, after checking its signature. */
function png(file: string): { width: number; height: number } {
  const b = readFileSync(file);
  expect([...b.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(b.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** A phone-sized browser, signed in as `person` with `scopes`. */
async function phone(person: string, scopes: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const { token } = await approverToken(db, person, scopes);
  const context = await browser.newContext({
    viewport: { width: WIDTH, height: 844 },
    deviceScaleFactor: SCALE,
    isMobile: true,
    hasTouch: true,
  });
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  await page.goto(`${base}/login`);
  await fits(page, 'sign-in', []);
  await page.getByLabel('Approver token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  return { context, page };
}

/**
 * What sticks out of the screen: each element whose box reaches past its right edge, by tag and class,
 * but for what only a screen reader reads (clipped by its visually hidden box).
 * With `scrolling`, what a region that scrolls sideways of its own holds is left out: the tables of
 * tokens, too many columns for any phone, scroll within the page, which itself does not.
 */
function sticksOut(page: Page, scrolling: boolean): Promise<string[]> {
  return page.evaluate(
    ([width, scrolling]) => {
      const out: string[] = [];
      for (const el of Array.from(document.querySelectorAll('body *'))) {
        const r = el.getBoundingClientRect();
        const unseen = el.closest('.visually-hidden') || (scrolling && el.closest('[role=region].scroll'));
        if (r.width > 0 && r.right > width + 0.5 && !unseen)
          out.push(`${el.tagName.toLowerCase()}${el.className ? `.${String(el.className)}` : ''}`);
      }
      return out;
    },
    [WIDTH, scrolling] as const,
  );
}

/**
 * Checks the page fits a phone: nothing wider than the screen (the document does not scroll sideways,
 * and no element reaches past its edge, not even inside a box of its own that scrolls), each of `nav`
 * (the links of the navigation, in order) on the screen and the topmost thing where a finger taps it, at
 * least 44 px high. Photographs it first, so a page that fails can be looked at.
 */
async function fits(page: Page, name: string, nav: string[], scrolling = false): Promise<void> {
  await page.getByRole('heading', { level: 1 }).waitFor();
  const file = `${shots}narrow-${name}.png`;
  await page.screenshot({ path: file, fullPage: true });
  const shot = png(file);
  expect(shot.width).toBe(WIDTH * SCALE);
  expect(shot.height).toBeGreaterThanOrEqual(844 * SCALE);
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(WIDTH);
  expect(await sticksOut(page, scrolling)).toEqual([]);
  const links = page.getByRole('navigation', { name: 'Main' }).getByRole('link');
  expect(await links.allTextContents()).toEqual(nav);
  const targets = nav.length ? [...(await links.all()), page.getByRole('button', { name: 'Sign out' })] : [];
  for (const target of targets) {
    expect(await target.isVisible()).toBe(true);
    const box = (await target.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(WIDTH);
    expect(box.height).toBeGreaterThanOrEqual(44);
    // What a tap at its middle lands on (the page scrolled to the top, where the header is).
    expect(
      await target.evaluate(
        (el, [x, y]) => {
          const hit = document.elementFromPoint(x!, y!);
          return hit === el || el.contains(hit);
        },
        [box.x + box.width / 2, box.y + box.height / 2],
      ),
    ).toBe(true);
  }
}

/** The decision form's fields and buttons, each wholly on the screen once scrolled to. */
async function formFits(page: Page): Promise<void> {
  for (const target of [
    page.getByLabel('Reason'),
    page.getByRole('button', { name: 'Approve and run' }),
    page.getByRole('button', { name: 'Reject' }),
  ]) {
    await target.scrollIntoViewIfNeeded();
    const box = (await target.boundingBox())!;
    expect([box.x >= 0, box.x + box.width <= WIDTH, box.height >= 44]).toEqual([true, true, true]);
  }
}

const APPROVER_NAV = ['Pending (2)', 'History', 'Sent mail'];

it('an approver on a phone reads the pending requests and a long one in full, and rejects it there', async () => {
  const { context, page } = await phone('Ana Berg (finance, Hamburg)', ['approvals:decide']);
  await fits(page, 'pending', APPROVER_NAV);

  await page.getByRole('link', { name: `Review and decide ${LONG}` }).click();
  await page.getByRole('heading', { name: 'Decide' }).waitFor();
  await fits(page, 'approval', APPROVER_NAV);
  // The long values are all there to read, wrapped rather than cut.
  const values = page.getByRole('table', { name: `The values ${LONG} was filed with` });
  expect(await values.getByRole('row', { name: 'customer.email' }).getByRole('cell').textContent()).toMatch(
    new RegExp(`^${EMAIL.replaceAll('.', '\\.')}Text, ${EMAIL.length} characters, in full\\.$`),
  );
  expect(
    await page.getByRole('table', { name: `The arguments of ${LONG}, as they will run` }).textContent(),
  ).toContain(args.idempotency_key);
  await formFits(page);

  await page.getByLabel('Reason').fill('Already paid by bank transfer on 2 December.');
  await page.getByRole('button', { name: 'Reject' }).tap();
  expect(await page.getByRole('status').textContent()).toBe('Rejected. It will never run. ');
  await fits(page, 'rejected', ['Pending (1)', 'History', 'Sent mail']);
  const [row] = await db.sql`select status, decision_reason from bulkhead_approvals where id = ${LONG}`;
  expect(row).toEqual({
    status: 'rejected',
    decision_reason: 'Already paid by bank transfer on 2 December.',
  });

  for (const [name, link] of [
    ['history', 'History'],
    ['mail', 'Sent mail'],
  ] as const) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).tap();
    await page.getByRole('heading', { name: link, level: 1 }).waitFor();
    await fits(page, name, ['Pending (1)', 'History', 'Sent mail']);
  }
  await context.close();
});

it('an operator on a phone sees and taps every link of the navigation, Charts, Tools and Groups too, and each page fits', async () => {
  const { context, page } = await phone('Ola Nordmann (operations)', ['approvals:decide', 'tokens:manage']);
  const [waiting] = await db.sql<{ pending: number }[]>`
    select count(*)::int as pending from bulkhead_approvals where status = 'pending'`;
  const nav = [
    `Pending (${waiting!.pending})`,
    'History',
    'Sent mail',
    'Tokens',
    'Audit log',
    'Charts',
    'Tools',
    'Groups',
  ];
  await fits(page, 'operator-pending', nav);
  await page.getByRole('link', { name: `Review and decide ${SHORT}` }).click();
  await page.getByRole('heading', { name: 'Decide' }).waitFor();
  await fits(page, 'operator-approval', nav);
  await formFits(page);
  for (const [name, heading] of [
    ['Tokens', 'Tokens'],
    ['Audit log', 'Audit log'],
    ['Charts', 'Charts'],
    ['Tools', 'Tools'],
    ['Groups', 'Groups'],
  ] as const) {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name, exact: true }).tap();
    await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    // The audit log counts the pending requests for the navigation; the others name the page alone.
    const [, ...rest] = nav;
    const here = name === 'Audit log' ? nav : ['Pending', ...rest];
    await fits(page, `operator-${name.toLowerCase().replace(' ', '-')}`, here, name === 'Tokens');
  }
  await context.close();
});

it('a person signed in with their company account issues a token of their own on a phone; My tokens and the token page fit', async () => {
  await db.sql`insert into bulkhead_groups (idp_group, tokens, updated_by) values ('engineering', '{dev-knowledge}', 'test')`;
  const person = await personSession((await db.as('console')).sql, {
    sub: 'phone-person',
    name: 'Maximiliane Nordlicht-Oberhauser',
    email: EMAIL,
    groups: ['engineering'],
  });
  const context = await browser.newContext({
    viewport: { width: WIDTH, height: 844 },
    deviceScaleFactor: SCALE,
    isMobile: true,
    hasTouch: true,
  });
  await context.addCookies([{ name: 'bh_session', value: person.sid, url: base }]);
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  await page.goto(`${base}/`);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'My tokens' }).tap();
  const nav = ['Pending', 'History', 'Sent mail', 'My tokens'];
  await fits(page, 'my-tokens-empty', nav);
  const form = page.getByRole('form', { name: 'Issue a token for dev-knowledge' });
  await form.getByLabel('Label').fill('Cursor on the laptop of the Hamburg office, second floor');
  await form.getByRole('button', { name: 'Issue a token for dev-knowledge' }).tap();
  await page.getByRole('heading', { name: 'Token issued' }).waitFor();
  await fits(page, 'my-token-issued', nav);
  await page.getByRole('link', { name: 'Back to my tokens' }).tap();
  await page.getByRole('heading', { name: 'My tokens' }).waitFor();
  expect(await page.getByRole('region', { name: 'My tokens' }).locator('tbody tr').count()).toBe(1);
  await fits(page, 'my-tokens', nav, true);
  await context.close();
});

it('on a desktop the navigation stays one row beside the name, as before', async () => {
  const { token } = await approverToken(db, 'Desk Operator', ['approvals:decide', 'tokens:manage']);
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  await page.goto(`${base}/login`);
  await page.getByLabel('Approver token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  const tops = await Promise.all(
    [
      page.getByRole('link', { name: 'Bulkhead approvals' }),
      ...(await page.getByRole('navigation', { name: 'Main' }).getByRole('link').all()),
    ].map(async (l) => {
      const b = (await l.boundingBox())!;
      return Math.round(b.y + b.height / 2);
    }),
  );
  expect(tops).toEqual(tops.map(() => tops[0]));
  await context.close();
});
