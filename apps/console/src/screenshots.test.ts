import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createAuditWriter, type AuditEventInput } from '@bulkhead/audit';
import { createLogger } from '@bulkhead/core';
import { argumentsHash, issueToken } from '@bulkhead/core/operator';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { serveConsole, type ServedConsole } from './fixtures/served-console.ts';

/** Where the screenshots go: beside the package, ignored by git, kept after the run to look at. */
const shots = fileURLToPath(new URL('../test-output/screenshots/', import.meta.url));

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let served: ServedConsole;
let browser: Browser;
let base: string;

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  db = await createTestDatabase();
  const server = (name: string) => ({
    name,
    description: name,
    resource: `http://127.0.0.1:1/${name}/mcp`,
    scopes: [],
    customerBound: false,
  });
  // The tools page offers their tools; nothing here connects to them.
  served = await serveConsole(db, logger, [server('admin'), server('customer')]);
  ({ base, browser } = served);
});
afterAll(async () => {
  await served?.close();
  await db.drop();
});

/** `n` events like `event`, each its own request. */
function times(n: number, event: Omit<AuditEventInput, 'requestId' | 'durationMs'>): AuditEventInput[] {
  return Array.from({ length: n }, () => ({ ...event, requestId: randomUUID(), durationMs: 5 }));
}

/** A known day of the audit log, written by the owner as the servers would have written it. */
async function writeEvents(): Promise<void> {
  const call = { method: 'tools/call', tokenLabel: 'billing agent' };
  const events = [
    ...times(7, { ...call, server: 'admin', tool: 'get_invoice', outcome: 'ok' }),
    ...times(1, {
      ...call,
      server: 'admin',
      tool: 'get_invoice',
      outcome: 'rate_limited',
      resultSummary: { reason: 'too_many_calls' },
    }),
    ...times(2, { ...call, server: 'admin', tool: 'send_invoice', outcome: 'pending_approval' }),
    ...times(3, { ...call, server: 'customer', tool: 'open_ticket', outcome: 'ok' }),
    ...times(2, {
      ...call,
      server: 'customer',
      tool: 'close_ticket',
      outcome: 'forbidden',
      resultSummary: { reason: 'missing_scope' },
    }),
    ...times(1, { ...call, server: 'customer', tool: 'delete_everything', outcome: 'unknown_tool' }),
    // Not calls, and the second no refusal: neither is counted as one.
    ...times(1, { server: 'admin', method: 'tools/list', outcome: 'ok' }),
    ...times(1, { server: 'console', method: 'approvals/decide', tool: 'send_invoice', outcome: 'rejected' }),
    ...times(1, {
      server: 'console',
      method: 'console/sign-in',
      outcome: 'unauthorized',
      resultSummary: { reason: 'unknown_token' },
    }),
  ];
  const audit = createAuditWriter(db.sql);
  await Promise.all(events.map((e) => audit.append(e)));
}

/**
 * Approval requests with known decision times, filed and decided by the owner (whom the approvals'
 * guard lets set the times), and one from three days ago that no chart of the last day counts.
 */
async function writeApprovals(): Promise<void> {
  const rows: [status: string, requestedAgo: string, decidedAfterSeconds: number | null][] = [
    ['approved', '3 hours', 30],
    ['rejected', '3 hours', 90],
    ['executed', '3 hours', 200],
    ['rejected', '3 hours', 600],
    ['approved', '3 hours', 7200],
    ['pending', '1 hour', null],
    ['pending', '2 hours', null], // expired undecided: its expiry below has passed
    ['withdrawn', '2 hours', null],
    ['rejected', '3 days', 5],
  ];
  const args = { invoice_number: 'R-2026-0001' };
  for (const [i, [status, ago, after]] of rows.entries())
    await db.sql`
      insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
        status, requested_at, expires_at, request_id, decided_at, decided_by, withdrawn_at)
      values (${`ap_screenshot${'abcdefghj'[i]}2`}, 'admin', 'send_invoice', ${db.sql.json(args)},
        ${db.sql.json(args)}, ${argumentsHash(args)}, 'Send invoice R-2026-0001.', ${status},
        now() - ${ago}::interval,
        now() + ${i === 6 ? '-1 minute' : '1 day'}::interval, ${randomUUID()},
        ${after === null ? null : db.sql`now() - ${ago}::interval + ${after} * interval '1 second'`},
        ${after === null ? null : 'console:Ana Berg'},
        ${status === 'withdrawn' ? db.sql`now() - interval '1 hour'` : null})`;
}

/** The cells of a table's body, row by row. */
function cells(table: Locator): Promise<string[][]> {
  return table
    .locator('tbody tr')
    .evaluateAll((rows) =>
      rows.map((r) => Array.from((r as HTMLTableRowElement).cells).map((c) => c.textContent ?? '')),
    );
}

/** The titles of a chart's marks: each holds the mark's exact number. */
function markTitles(page: Page, chart: string): Promise<string[]> {
  return page.locator(`svg[aria-labelledby="${chart}-title"] rect > title`).allTextContents();
}

/** A PNG's dimensions, after checking its signature. */
function png(file: string): { width: number; height: number; bytes: number } {
  const b = readFileSync(file);
  expect([...b.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  expect(b.subarray(12, 16).toString('latin1')).toBe('IHDR');
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20), bytes: b.length };
}

it('the operator pages load and are photographed (tokens, audit log, tools, charts), and the charts show exactly the events and approvals made', async () => {
  await writeEvents();
  await writeApprovals();
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Ola Nordmann (operations)',
    scopes: ['approvals:decide', 'tokens:manage'],
    expiresAt: null,
    createdBy: 'test',
    owner: 'ola.nordmann@example.com',
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  // A style or an element the page's CSP refuses is reported on the console.
  const complaints: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') complaints.push(m.text());
  });
  await page.goto(`${base}/login`);
  await page.getByLabel('Approver token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();

  for (const [name, path] of [
    ['tokens', '/operator/tokens'],
    ['audit', '/operator/audit'],
    ['tools', '/operator/tools'],
  ] as const) {
    const res = await page.goto(`${base}${path}`);
    expect(res?.status()).toBe(200);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.screenshot({ path: `${shots}${name}.png`, fullPage: true });
    const shot = png(`${shots}${name}.png`);
    expect(shot.width).toBe(1100);
    expect(shot.height).toBeGreaterThanOrEqual(900);
    expect(shot.bytes).toBeGreaterThan(5_000);
  }

  // The switch form suggests the tools called on each server, but not one a server did not have.
  expect(
    await page
      .locator('#seen-tools option')
      .evaluateAll((os) =>
        os.map((o) => `${(o as HTMLOptionElement).label}/${(o as HTMLOptionElement).value}`),
      ),
  ).toEqual(['admin/get_invoice', 'admin/send_invoice', 'customer/close_ticket', 'customer/open_ticket']);

  const res = await page.goto(`${base}/operator/charts`);
  expect(res?.status()).toBe(200);
  await page.getByRole('heading', { name: 'Charts', level: 1 }).waitFor();
  const [backlog] = await db.sql<{ unsealed: number; oldest: Date }[]>`
    select unsealed::int, oldest_at as oldest from bulkhead_audit_backlog()`;
  expect(await page.locator('#backlog-count').textContent()).toBe(`${backlog!.unsealed} events`);
  expect(await page.locator('#backlog-heading ~ p time').getAttribute('datetime')).toBe(
    backlog!.oldest.toISOString(),
  );

  // Calls per server, by hour: the hours of the calls made, counted here from their times.
  const callTimes = await db.sql<{ server: string; at: Date }[]>`
    select server, at from audit_events where method = 'tools/call'`;
  const hours = [...new Set(callTimes.map((c) => c.at.toISOString().slice(0, 13)))].sort();
  const perHour = (server: string, hour: string) =>
    callTimes.filter((c) => c.server === server && c.at.toISOString().startsWith(hour)).length;
  expect(await page.getByRole('list', { name: 'Servers' }).getByRole('listitem').allTextContents()).toEqual([
    ' admin: 10 calls',
    ' customer: 6 calls',
  ]);
  expect(
    await cells(
      page.getByRole('table', {
        name: 'Calls per server and hour, in numbers (hours without calls left out)',
      }),
    ),
  ).toEqual(
    hours.map((h) => [
      `${h.replace('T', ' ')}:00 UTC`,
      `${perHour('admin', h)}`,
      `${perHour('customer', h)}`,
    ]),
  );
  expect(await markTitles(page, 'calls-chart')).toEqual(
    hours.flatMap((h) => [
      ...(perHour('admin', h) ? [`admin, ${h.replace('T', ' ')}:00 UTC: ${perHour('admin', h)} calls`] : []),
      ...(perHour('customer', h)
        ? [`customer, ${h.replace('T', ' ')}:00 UTC: ${perHour('customer', h)} calls`]
        : []),
    ]),
  );

  expect(await cells(page.getByRole('table', { name: 'Every tool called, in numbers' }))).toEqual([
    ['admin', 'get_invoice', '8'],
    ['customer', 'open_ticket', '3'],
    ['admin', 'send_invoice', '2'],
    ['customer', 'close_ticket', '2'],
    ['customer', 'delete_everything', '1'],
  ]);
  expect(await markTitles(page, 'tools-chart')).toEqual([
    'admin/get_invoice: 8 calls',
    'customer/open_ticket: 3 calls',
    'admin/send_invoice: 2 calls',
    'customer/close_ticket: 2 calls',
    'customer/delete_everything: 1 call',
  ]);

  expect(
    await cells(page.getByRole('table', { name: 'Refusals and failures by reason, in numbers' })),
  ).toEqual([
    ['forbidden', 'missing_scope', '2'],
    ['rate_limited', 'too_many_calls', '1'],
    ['unauthorized', 'unknown_token', '1'],
    ['unknown_tool', '—', '1'],
  ]);
  expect(await markTitles(page, 'refusals-chart')).toEqual([
    'forbidden: missing_scope: 2 events',
    'rate_limited: too_many_calls: 1 event',
    'unauthorized: unknown_token: 1 event',
    'unknown_tool: 1 event',
  ]);

  expect(await cells(page.getByRole('table', { name: 'Approval requests by outcome, in numbers' }))).toEqual([
    ['Waiting for a decision', '1'],
    ['Approved, about to run', '2'],
    ['Rejected', '2'],
    ['Expired undecided', '1'],
    ['Approved and executed', '1'],
    ['Withdrawn by the requester', '1'],
  ]);

  // Decided after 30 s, 90 s, 200 s, 600 s and 7200 s: the median is 200 s, the 90th percentile
  // 600 + 0.6 × (7200 − 600) = 4560 s.
  const decisions = page.getByRole('region', { name: 'Time to decision' });
  expect(await decisions.locator('dd').allTextContents()).toEqual(['5 requests', '3 min 20 s', '1 h 16 min']);
  expect(await cells(page.getByRole('table', { name: 'Time to decision, in numbers' }))).toEqual([
    ['under 1 min', '1'],
    ['1–5 min', '2'],
    ['5–15 min', '1'],
    ['15–60 min', '0'],
    ['1–4 h', '1'],
    ['4–24 h', '0'],
    ['1 day or more', '0'],
  ]);
  expect(await markTitles(page, 'decisions-chart')).toEqual([
    'decided requests, under 1 min: 1 request',
    'decided requests, 1–5 min: 2 requests',
    'decided requests, 5–15 min: 1 request',
    'decided requests, 1–4 h: 1 request',
  ]);
  for (const chart of [
    'calls-chart',
    'tools-chart',
    'refusals-chart',
    'approvals-chart',
    'decisions-chart',
  ]) {
    const svg = page.locator(`svg[aria-labelledby="${chart}-title"]`);
    expect([
      await svg.getAttribute('role'),
      (await svg.locator('> title').textContent())!.length > 10,
    ]).toEqual(['img', true]);
  }

  await page.screenshot({ path: `${shots}charts.png`, fullPage: true });
  const shot = png(`${shots}charts.png`);
  expect(shot.width).toBe(1100);
  expect(shot.height).toBeGreaterThan(900);
  expect(shot.bytes).toBeGreaterThan(20_000);

  // By day, the same calls fall in the days of their times; a range without them shows none.
  await page.getByLabel('Count by').selectOption('day');
  await page.getByRole('button', { name: 'Show' }).click();
  await page
    .getByRole('table', { name: 'Calls per server and day, in numbers (days without calls left out)' })
    .waitFor();
  const days = [...new Set(callTimes.map((c) => c.at.toISOString().slice(0, 10)))].sort();
  const perDay = (server: string, day: string) =>
    callTimes.filter((c) => c.server === server && c.at.toISOString().startsWith(day)).length;
  expect(
    await cells(
      page.getByRole('table', { name: 'Calls per server and day, in numbers (days without calls left out)' }),
    ),
  ).toEqual(days.map((d) => [d, `${perDay('admin', d)}`, `${perDay('customer', d)}`]));

  await page.goto(`${base}/operator/charts?from=2020-01-01T00:00&to=2020-01-02T00:00&bucket=hour`);
  expect(await page.getByRole('region', { name: 'Calls per server' }).textContent()).toBe(
    'Calls per serverNo tool calls in this range.',
  );
  expect(await page.getByRole('region', { name: 'Approval requests by outcome' }).textContent()).toBe(
    'Approval requests by outcomeNo approval was requested in this range.',
  );
  // Nothing the CSP refused, nothing else the browser complained of (before the 400 below, which it reports).
  expect(complaints).toEqual([]);
  const refused = await page.goto(`${base}/operator/charts?from=2026-12-04T10:00&to=2026-12-01T10:00`);
  expect(refused?.status()).toBe(400);
  expect(await page.getByRole('alert').textContent()).toBe('The start must come before the end.');

  await context.close();
});
