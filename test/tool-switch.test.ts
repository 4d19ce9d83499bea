import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { startMailCatcher, type MailCatcher } from '@bulkhead/core/mail-catcher';
import { switchToolOff, switchToolOn } from '@bulkhead/core/operator';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { root } from './helpers.ts';

const main = fileURLToPath(new URL('../servers/admin/src/main.ts', import.meta.url));

let db: TestDatabase;
let catcher: MailCatcher;
let replicas: TestServer[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  catcher = await startMailCatcher();
  // Two replicas on one database that re-read only on announcements: what they do at once is the
  // database's notification, not their periodic read.
  replicas = [
    await startTestServer(adminServer, { db, toolSwitchRefreshMs: 3_600_000 }),
    await startTestServer(adminServer, { db, toolSwitchRefreshMs: 3_600_000 }),
  ];
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await catcher.close();
  await db.drop();
});

const names = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);

/** Asks every client until `has(list)` holds on each (a client that never agrees times the test out). */
async function untilEvery(clients: Client[], has: (tools: string[]) => boolean): Promise<void> {
  for (;;) {
    const lists = await Promise.all(clients.map(names));
    if (lists.every(has)) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Resolves on the client's next `notifications/tools/list_changed`. */
function nextListChanged(client: Client): Promise<void> {
  return new Promise((resolve) =>
    client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
  );
}

async function stdioClient(token: string, version: '2025-11-25' | '2026-07-28'): Promise<Client> {
  const client = new Client(
    { name: `switch-stdio-${version}`, version: '1' },
    { versionNegotiation: { mode: version === '2025-11-25' ? 'legacy' : { pin: version } } },
  );
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', main, '--stdio'],
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: (await db.as('admin')).url,
        BULKHEAD_MIGRATE: 'false',
        BULKHEAD_TOKEN: token,
        BULKHEAD_SMTP_URL: catcher.url,
        BULKHEAD_MAIL_FROM: 'billing@bulkhead.test',
      },
      stderr: 'pipe',
    }),
  );
  return client;
}

it('send_invoice switched off leaves tools/list on every replica, is refused as unknown and audited, and listening clients are told; switched on, it is back', async () => {
  const token = await issueTestToken(db.sql, adminServer, { label: 'billing agent' });
  const http = await Promise.all(replicas.map((r) => connectTestClient(r.url, token)));
  const listener = await connectTestClient(replicas[1]!.url, token, 'listening client');
  const legacyStdio = await stdioClient(token, '2025-11-25');
  const modernStdio = await stdioClient(token, '2026-07-28');
  try {
    const subscription = await listener.listen({ toolsListChanged: true });
    expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
    const stdioSubscription = await modernStdio.listen({ toolsListChanged: true });
    expect(stdioSubscription.honoredFilter).toEqual({ toolsListChanged: true });
    const everyone = [...http, listener, legacyStdio, modernStdio];
    for (const client of everyone) expect(await names(client)).toContain('send_invoice');

    let told = [listener, legacyStdio, modernStdio].map(nextListChanged);
    const off = await switchToolOff(db.sql, {
      server: 'admin',
      tool: 'send_invoice',
      reason: 'invoices went to stale addresses',
      operator: 'ops@example.com',
    });
    expect(off).toMatchObject({ server: 'admin', tool: 'send_invoice', switchedBy: 'ops@example.com' });
    await Promise.all(told);
    await untilEvery(everyone, (tools) => !tools.includes('send_invoice'));
    expect(await names(http[0]!)).toEqual(
      [...adminServer.catalog.visible([...adminServer.catalog.scopes])]
        .map((t) => t.name)
        .filter((n) => n !== 'send_invoice'),
    );

    for (const client of [http[0]!, http[1]!, legacyStdio])
      await expect(
        client.callTool({ name: 'send_invoice', arguments: { invoice_number: 'R-2026-0001' } }),
      ).rejects.toThrow('Unknown tool: send_invoice');
    // A second switch-off changes nothing and records nothing.
    expect(
      await switchToolOff(db.sql, { server: 'admin', tool: 'send_invoice', reason: 'again', operator: 'x' }),
    ).toBeUndefined();

    told = [listener, legacyStdio, modernStdio].map(nextListChanged);
    const on = await switchToolOn(db.sql, {
      server: 'admin',
      tool: 'send_invoice',
      operator: 'ops@example.com',
    });
    expect(on?.reason).toBe('invoices went to stale addresses');
    await Promise.all(told);
    await untilEvery(everyone, (tools) => tools.includes('send_invoice'));
    expect(
      await switchToolOn(db.sql, { server: 'admin', tool: 'send_invoice', operator: 'x' }),
    ).toBeUndefined();
    await subscription.close();
    await stdioSubscription.close();
  } finally {
    await Promise.all([...http, listener, legacyStdio, modernStdio].map((c) => c.close()));
  }
  const events = await db.sql`
    select method, tool, outcome, token_label, result_summary from audit_events
    where tool = 'send_invoice' order by seq`;
  expect(events).toEqual([
    {
      method: 'tools/switch',
      tool: 'send_invoice',
      outcome: 'ok',
      token_label: 'ops@example.com',
      result_summary: {
        state: 'off',
        reason: 'invoices went to stale addresses',
        switched_by: 'ops@example.com',
      },
    },
    ...[1, 2, 3].map(() => ({
      method: 'tools/call',
      tool: 'send_invoice',
      outcome: 'unknown_tool',
      token_label: 'billing agent',
      result_summary: { argument_names: ['invoice_number'] },
    })),
    {
      method: 'tools/switch',
      tool: 'send_invoice',
      outcome: 'ok',
      token_label: 'ops@example.com',
      result_summary: { state: 'on', reason: null, switched_by: 'ops@example.com' },
    },
  ]);
}, 120_000);

it('even when the announcement is lost, a replica drops the switched-off tool on its next periodic read', async () => {
  const replica = await startTestServer(adminServer, { db, toolSwitchRefreshMs: 100 });
  const token = await issueTestToken(db.sql, adminServer);
  const client = await connectTestClient(replica.url, token);
  try {
    expect(await names(client)).toContain('get_ticket');
    await db.sql.begin(async (tx) => {
      await tx`alter table bulkhead_tool_switches disable trigger bulkhead_tool_switches_changed`;
      await tx`insert into bulkhead_tool_switches (server, tool, reason, switched_by)
        values ('admin', 'get_ticket', 'unannounced', 'test')`;
      await tx`alter table bulkhead_tool_switches enable trigger bulkhead_tool_switches_changed`;
    });
    await untilEvery([client], (tools) => !tools.includes('get_ticket'));
  } finally {
    await db.sql`delete from bulkhead_tool_switches where tool = 'get_ticket'`;
    await client.close();
    await replica.close();
  }
});

it('a server role reads only its own server’s switches, and writes none', async () => {
  await db.sql`insert into bulkhead_tool_switches (server, tool, reason, switched_by)
    values ('admin', 'find_customers', 'role test', 'test')`;
  try {
    const admin = (await db.as('admin')).sql;
    const customer = (await db.as('customer')).sql;
    expect(await admin`select tool, reason from bulkhead_switched_off_tools('admin')`).toEqual([
      { tool: 'find_customers', reason: 'role test' },
    ]);
    await expect(customer`select * from bulkhead_switched_off_tools('admin')`).rejects.toThrow(
      /may read the tool switches only of its own server/,
    );
    expect(await customer`select * from bulkhead_switched_off_tools('customer')`).toEqual([]);
    await expect(admin`select * from bulkhead_tool_switches`).rejects.toThrow(/permission denied/);
    await expect(admin`delete from bulkhead_tool_switches`).rejects.toThrow(/permission denied/);
  } finally {
    await db.sql`delete from bulkhead_tool_switches`;
  }
});

it('a server stops with a listen stream open: the stream is ended, not waited for', async () => {
  const replica = await startTestServer(adminServer, { db });
  const client = await connectTestClient(replica.url, await issueTestToken(db.sql, adminServer));
  try {
    const subscription = await client.listen({ toolsListChanged: true });
    // Hangs (and times the test out) while the open stream holds the HTTP server's close.
    await replica.close();
    expect(['graceful', 'remote']).toContain(await subscription.closed);
  } finally {
    await client.close();
  }
});
