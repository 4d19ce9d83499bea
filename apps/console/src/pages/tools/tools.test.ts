import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import { issueToken } from '@bulkhead/core/operator';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { serveConsole, type ServedConsole } from '../../fixtures/served-console.ts';

const annotations = { destructiveHint: false, idempotentHint: true, openWorldHint: false };
const orders = createServer({
  name: 'switch-demo',
  version: '1.0.0',
  description: 'Orders, for the console tool switch test.',
  tools: [
    defineTool({
      name: 'look_up_order',
      title: 'Look up order',
      description: 'Returns the state of one order by its number.',
      scope: 'orders:read',
      input: z.object({ order: z.string().max(20) }),
      annotations: { ...annotations, readOnlyHint: true },
      handler: async ({ order }) => ({ order, state: 'shipped' }),
    }),
    defineTool({
      name: 'cancel_order',
      title: 'Cancel order',
      description: 'Cancels one order that has not shipped yet; returns the order and its new state.',
      scope: 'orders:write',
      input: z.object({ order: z.string().max(20) }),
      annotations: { ...annotations, readOnlyHint: false },
      handler: async ({ order }) => ({ order, state: 'cancelled' }),
    }),
  ],
});

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let mcp: TestServer;
let served: ServedConsole;
let browser: Browser;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  // Re-read only on the database's announcement: a switch seen at once was told by NOTIFY, not a timer.
  mcp = await startTestServer(orders, { db, logger, toolSwitchRefreshMs: 3_600_000 });
  served = await serveConsole(db, logger, [
    {
      name: 'switch-demo',
      description: 'Orders',
      resource: mcp.url.href,
      scopes: ['orders:read', 'orders:write'],
      customerBound: false,
    },
  ]);
  ({ base, browser } = served);
});
afterAll(async () => {
  await served?.close();
  await mcp.close();
  await db.drop();
});

async function toolNames(client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map((t) => t.name).sort();
}

/** Asks tools/list until `expected` (a server that never agrees fails at the deadline with its last answer). */
async function untilListed(client: Client, expected: string[]): Promise<void> {
  const deadline = Date.now() + 10_000;
  let names = await toolNames(client);
  while (JSON.stringify(names) !== JSON.stringify(expected) && Date.now() < deadline) {
    await sleep(20);
    names = await toolNames(client);
  }
  expect(names).toEqual(expected);
}

async function issueApprover(label: string, scopes: string[]): Promise<string> {
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label,
    scopes,
    expiresAt: null,
    createdBy: 'test',
    owner: `${label.toLowerCase().replace(/\W+/g, '.')}@example.com`,
  });
  return token;
}

it('an operator switches a tool off in the browser: its server drops it at once and refuses it as unknown; switched on, it is back; every switch audited', async () => {
  const client = await connectTestClient(
    mcp.url,
    await issueTestToken(db.sql, orders, { label: 'order agent' }),
  );
  const operator = await issueApprover('Ola Nordmann', ['approvals:decide', 'tokens:manage']);
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  try {
    // A call in the last 30 days makes the tool a suggestion of the form.
    await client.callTool({ name: 'look_up_order', arguments: { order: 'O-1' } });
    await page.goto(`${base}/login`);
    await page.getByLabel('Approver token').fill(operator);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
    await page.getByRole('link', { name: 'Tools' }).click();
    await page.getByRole('heading', { name: 'Tools', level: 1 }).waitFor();
    expect(await page.getByText('No tool is switched off.').count()).toBe(1);
    expect(
      await page
        .locator('#seen-tools option')
        .evaluateAll((os) => os.map((o) => [(o as HTMLOptionElement).value, (o as HTMLOptionElement).label])),
    ).toEqual([['look_up_order', 'switch-demo']]);
    expect(await toolNames(client)).toEqual(['cancel_order', 'look_up_order']);

    await page.getByLabel('Server').selectOption('switch-demo');
    await page.getByLabel('Tool', { exact: true }).fill('cancel_order');
    await page.getByLabel('Reason').fill('Cancellations hit the wrong warehouse (incident 412).');
    await page.getByRole('button', { name: 'Switch off' }).click();
    expect(await page.getByRole('status').textContent()).toBe(
      'Switched cancel_order of switch-demo off: every replica of the server leaves it out of tools/list and refuses calls to it within a second.',
    );
    const table = page.getByRole('table', { name: 'Every switched-off tool, by server and tool.' });
    expect(
      await table.locator('tbody tr').evaluateAll((rows) =>
        rows.map((r) =>
          Array.from((r as HTMLTableRowElement).cells)
            .slice(0, 4)
            .map((c) => c.textContent),
        ),
      ),
    ).toEqual([
      [
        'switch-demo',
        'cancel_order',
        'Cancellations hit the wrong warehouse (incident 412).',
        'ola.nordmann@example.com',
      ],
    ]);
    await untilListed(client, ['look_up_order']);
    await expect(client.callTool({ name: 'cancel_order', arguments: { order: 'O-1' } })).rejects.toThrow(
      'Unknown tool: cancel_order',
    );

    // The form's checks hold on the server too, whatever a browser lets through.
    const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const csrf = await page.locator('form[action="/operator/tools/off"] input[name="_csrf"]').inputValue();
    const post = (path: string, fields: Record<string, string>) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      });
    const badName = await post('/operator/tools/off', {
      server: 'switch-demo',
      tool: 'cancel order!',
      reason: 'x',
    });
    expect(badName.status).toBe(400);
    expect(await badName.text()).toContain(
      'A tool name is 1 to 128 letters, digits, dots, underscores or hyphens.',
    );
    const noReason = await post('/operator/tools/off', {
      server: 'switch-demo',
      tool: 'look_up_order',
      reason: ' ',
    });
    expect(noReason.status).toBe(400);
    expect(await noReason.text()).toContain('Say why it goes off, in 1 to 500 characters.');
    const noCsrf = await fetch(`${base}/operator/tools/on`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ server: 'switch-demo', tool: 'cancel_order' }),
    });
    expect(noCsrf.status).toBe(403);
    await untilListed(client, ['look_up_order']);

    await page.getByRole('button', { name: 'Switch on cancel_order of switch-demo' }).click();
    expect(await page.getByRole('status').textContent()).toBe(
      'Switched cancel_order of switch-demo on again: every replica of the server lists and serves it within a second.',
    );
    expect(await page.getByText('No tool is switched off.').count()).toBe(1);
    await untilListed(client, ['cancel_order', 'look_up_order']);
    const ran = await client.callTool({ name: 'cancel_order', arguments: { order: 'O-1' } });
    expect([ran.isError ?? false, JSON.parse((ran.content as { text: string }[])[0]!.text)]).toEqual([
      false,
      { order: 'O-1', state: 'cancelled' },
    ]);
  } finally {
    await context.close();
    await client.close();
  }

  // An approver without the operator right may not switch, and the refusal is audited too.
  const approver = await issueApprover('Ana Berg', ['approvals:decide']);
  const refused = await fetch(`${base}/operator/tools/off`, {
    method: 'POST',
    headers: { authorization: `Bearer ${approver}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ server: 'switch-demo', tool: 'look_up_order', reason: 'mine now' }),
  });
  expect(refused.status).toBe(403);
  expect(await db.sql`select tool from bulkhead_tool_switches`).toEqual([]);

  const events = await db.sql`
    select tool, outcome, token_label, arguments - 'source' - 'path' as arguments, result_summary
    from audit_events where server = 'console' and method = 'console/operator' order by seq`;
  const person = 'ola.nordmann@example.com';
  expect(events).toEqual([
    {
      tool: 'switch_tool',
      outcome: 'ok',
      token_label: 'Ola Nordmann',
      arguments: {
        person,
        server: 'switch-demo',
        tool: 'cancel_order',
        reason: 'Cancellations hit the wrong warehouse (incident 412).',
        off: true,
      },
      result_summary: { changed: true },
    },
    {
      tool: 'switch_tool',
      outcome: 'invalid_arguments',
      token_label: 'Ola Nordmann',
      arguments: { person, server: 'switch-demo', tool: 'cancel order!', reason: 'x', off: true },
      result_summary: { reason: 'invalid_tool' },
    },
    {
      tool: 'switch_tool',
      outcome: 'invalid_arguments',
      token_label: 'Ola Nordmann',
      arguments: { person, server: 'switch-demo', tool: 'look_up_order', reason: '', off: true },
      result_summary: { reason: 'invalid_reason' },
    },
    {
      tool: 'switch_tool',
      outcome: 'ok',
      token_label: 'Ola Nordmann',
      arguments: { person, server: 'switch-demo', tool: 'cancel_order', reason: null, off: false },
      result_summary: { changed: true },
    },
    {
      tool: 'page',
      outcome: 'forbidden',
      token_label: 'Ana Berg',
      arguments: { person: 'ana.berg@example.com', method: 'POST' },
      result_summary: { reason: 'not_an_operator' },
    },
  ]);
  const calls = await db.sql`
    select tool, outcome from audit_events where server = 'switch-demo' and method = 'tools/call' order by seq`;
  expect(calls).toEqual([
    { tool: 'look_up_order', outcome: 'ok' },
    { tool: 'cancel_order', outcome: 'unknown_tool' },
    { tool: 'cancel_order', outcome: 'ok' },
  ]);
});
