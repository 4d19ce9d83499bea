import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Client } from '@modelcontextprotocol/client';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAlertmanager, type TestAlertmanager } from '../servers/ops/src/fixtures/alertmanager.ts';
import { opsServer } from '../servers/ops/src/server.ts';
import { decideInConsole, signInToConsole } from './console-page.ts';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';

// The issue's "done when" for ops: a real Alertmanager, the ops server and the console as processes,
// and a person deciding in Chromium. A silence exists only after approval, exactly once although the
// ops server is stopped between the decision and the delivery; a rejected request makes nothing.

let db: TestDatabase;
let am: TestAlertmanager;
let ops: ServerProcess;
let opsPort: number;
let consoleServer: ServerProcess;
let browser: Browser;
let page: Page;
let client: Client;
let token: string;

const startOps = async () =>
  spawnServer('ops', (await db.as('ops')).url, { BULKHEAD_OPS_ALERTMANAGER_URL: am.url }, opsPort);

beforeAll(async () => {
  db = await createTestDatabase();
  am = await startAlertmanager();
  await am.postAlerts([
    { labels: { alertname: 'CheckoutLatencyHigh', service: 'checkout', severity: 'warning' } },
    { labels: { alertname: 'DiskFillingUp', service: 'search', severity: 'warning' } },
  ]);
  opsPort = await freePort();
  [ops, consoleServer] = await Promise.all([
    startOps(),
    spawnServer('console', (await db.as('console')).url),
  ]);
  token = await issueTestToken(db.sql, opsServer, { label: 'On-call assistant (Ana)' });
  client = await connectTestClient(ops.url, token, 'ops-e2e');
  const { token: approver } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Jonas (on call)',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  browser = await chromium.launch(chromiumLaunchOptions());
  page = await signInToConsole(browser, consoleServer.url.origin, approver);
}, 90_000);
afterAll(async () => {
  await client?.close();
  await browser?.close();
  await Promise.all([ops?.stop(), consoleServer?.stop()]);
  await am?.close();
  await db?.drop();
});

/** A person's decision in the console, in Chromium; `shown` is read on the request's page first. */
const decide = (id: string, verdict: 'approve' | 'reject', reason: string, shown?: string) =>
  decideInConsole(page, consoleServer.url.origin, { id, verdict, reason, ...(shown ? { shown } : {}) });

/** Asks for a silence of the checkout alert; returns its approval id. */
async function requestSilence(comment: string): Promise<string> {
  const pending = await client.callTool({
    name: 'create_silence',
    arguments: {
      matchers: [{ label: 'service', op: '=', value: 'checkout' }],
      duration: '2h',
      comment,
    },
  });
  expect(pending.isError).toBeFalsy();
  const result = pending.structuredContent as {
    status: string;
    approval_id: string;
    preview: { text: string };
  };
  expect(result.status).toBe('pending_approval');
  return result.approval_id;
}

/** Waits, bounded, until `check` holds. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const ourSilences = async (comment: string) =>
  (await am.silences()).filter((s) => s.comment.startsWith(comment));

it('lists what Alertmanager has firing', async () => {
  const listed = await client.callTool({ name: 'list_alerts', arguments: {} });
  expect(listed.isError).toBeFalsy();
  const text = JSON.stringify(listed.structuredContent);
  expect(text).toContain('CheckoutLatencyHigh');
  expect(text).toContain('DiskFillingUp');
});

it('a silence approved in the console while ops is down is made once ops is back, exactly once', async () => {
  const comment = 'Checkout deploy in progress; latency expected (e2e).';
  const id = await requestSilence(comment);
  const [row] = await db.sql<{ preview: string }[]>`select preview from bulkhead_approvals where id = ${id}`;
  expect(row!.preview).toContain('every alert where service is "checkout"');
  expect(row!.preview).toContain('for 2h');
  expect(row!.preview).toContain(comment);
  expect(row!.preview).toContain('Asked by "On-call assistant (Ana)"');
  expect(row!.preview).toContain('CheckoutLatencyHigh');
  expect(row!.preview).not.toContain('DiskFillingUp');
  expect(await ourSilences(comment)).toEqual([]);

  // The ops server goes away before the decision; the person approves in the browser meanwhile.
  await ops.stop();
  await decide(
    id,
    'approve',
    'Deploy window agreed with the checkout team.',
    '1 alert matches now: "CheckoutLatencyHigh"',
  );
  expect(await ourSilences(comment)).toEqual([]);

  // Back up, it runs the approved action and delivers the silence to Alertmanager once.
  ops = await startOps();
  await until('the silence is in Alertmanager', async () => (await ourSilences(comment)).length > 0);
  await until(
    'the outbox row is delivered',
    async () =>
      (await db.sql`select 1 from bulkhead_outbox where approval_id = ${id} and status = 'delivered'`)
        .length === 1,
  );
  const made = await ourSilences(comment);
  expect(made).toHaveLength(1);
  expect(made[0]!.status.state).toBe('active');

  await client.close();
  client = await connectTestClient(ops.url, token, 'ops-e2e');
  const status = await client.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
  expect(status.structuredContent).toMatchObject({ status: 'executed' });
  const silenced = await client.callTool({
    name: 'list_alerts',
    arguments: { matchers: [{ label: 'service', op: '=', value: 'checkout' }], include_silenced: true },
  });
  expect(JSON.stringify(silenced.structuredContent)).toContain(made[0]!.id);
  const story = await db.sql<{ method: string; outcome: string }[]>`
    select method, outcome from audit_events where approval_id = ${id} order by seq`;
  expect(story.map((e) => [e.method, e.outcome])).toEqual([
    ['tools/call', 'pending_approval'],
    ['approvals/decide', 'approved'],
    ['approvals/execute', 'executed'],
  ]);
}, 90_000);

it('a silence rejected in the console is never made', async () => {
  const comment = 'Mute checkout for the night (e2e, to be rejected).';
  const id = await requestSilence(comment);
  await decide(id, 'reject', 'Not without a ticket.');
  const status = await client.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
  expect(status.structuredContent).toMatchObject({ status: 'rejected' });
  expect(await db.sql`select 1 from bulkhead_outbox where approval_id = ${id}`).toEqual([]);
  expect(await ourSilences(comment)).toEqual([]);
}, 60_000);
