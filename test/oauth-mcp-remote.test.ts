import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { issueToken, revokeToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, issueTestToken } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';

// mcp-remote (the bridge Claude Desktop and others use for remote servers), driven by a script: once
// through the OAuth flow with the consent page clicked in Chromium, once with a revoked static token
// (401, so it is offered the OAuth flow).

const PROXY = createRequire(import.meta.url).resolve('mcp-remote/dist/proxy.js');

let db: TestDatabase;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;
let granterToken: string;
let configDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const [consolePort, adminPort] = await Promise.all([freePort(), freePort()]);
  [admin, consoleServer] = await Promise.all([
    spawnServer(
      'admin',
      (await db.as('admin')).url,
      { BULKHEAD_AUTHORIZATION_SERVER: `http://127.0.0.1:${consolePort}` },
      adminPort,
    ),
    spawnServer(
      'console',
      (await db.as('console')).url,
      { BULKHEAD_SERVER_URLS: `admin=http://127.0.0.1:${adminPort}` },
      consolePort,
    ),
  ]);
  granterToken = (
    await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'Jonas (billing lead)',
      scopes: ['approvals:decide', 'grants:issue'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'jonas@example.test',
    })
  ).token;
  configDir = mkdtempSync(join(tmpdir(), 'bulkhead-mcp-remote-'));
  browser = await chromium.launch(chromiumLaunchOptions());
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), consoleServer?.stop()]);
  await db.drop();
  rmSync(configDir, { recursive: true, force: true });
});

/** mcp-remote's environment: its token cache in a folder of this test's, and no real browser. */
function remoteEnv(): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: configDir,
    MCP_REMOTE_CONFIG_DIR: configDir,
    BROWSER: 'true',
  };
}

it('mcp-remote completes the OAuth flow (consent in Chromium), then lists and calls tools', async () => {
  const callbackPort = await freePort();
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [PROXY, admin.url.toString(), String(callbackPort), '--host', '127.0.0.1'],
    env: remoteEnv(),
    stderr: 'pipe',
  });
  const authorizationUrl = new Promise<string>((resolve) => {
    transport.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /Please authorize this client by visiting:\s+(\S+)/.exec(stderr);
      if (m) resolve(m[1]!);
    });
  });
  const client = new Client({ name: 'mcp-remote-e2e', version: '1.0.0' });
  const connected = client.connect(transport);

  const url = new URL(await authorizationUrl);
  expect(url.origin).toBe(consoleServer.url.origin);
  expect(url.searchParams.get('resource')).toBe(admin.url.toString());
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  await page.goto(url.toString());
  await page.getByLabel('Approver token').fill(granterToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Grant access to admin?' }).waitFor();
  expect(await page.locator('#consent-client').textContent()).toBe('MCP CLI Proxy');
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL(new RegExp(`^http://(localhost|127\\.0\\.0\\.1):${callbackPort}/`));
  await context.close();

  await connected;
  const tools = await client.listTools();
  expect(tools.tools.map((t) => t.name)).toContain('find_customers');
  const found = await client.callTool({ name: 'find_customers', arguments: { query: 'C-1001' } });
  expect(found.isError).toBeFalsy();
  await client.close();

  const [grant] = await db.sql<{ server: string; granted_by: string; client_name: string }[]>`
    select g.server, g.granted_by, c.client_name from bulkhead_oauth_grants g
    join bulkhead_oauth_clients c using (client_id)`;
  expect(grant).toMatchObject({ server: 'admin', granted_by: 'Jonas (billing lead)' });
  const calls = await db.sql<{ outcome: string }[]>`
    select e.outcome from audit_events e join bulkhead_tokens t on t.id = e.token_id
    where t.grant_id is not null and e.tool = 'find_customers'`;
  expect(calls).toEqual([{ outcome: 'ok' }]);
}, 120_000);

it('mcp-remote given a revoked static token gets 401 invalid_token with the resource metadata, and is offered OAuth', async () => {
  const token = await issueTestToken(db.sql, adminServer, { label: 'Claude Desktop (revoked)' });
  const id = token.split('_')[2]!;
  await revokeToken(db.sql, id);
  // A config folder of its own: the grant of the test above must not stand in for the token.
  const ownDir = mkdtempSync(join(tmpdir(), 'bulkhead-mcp-remote-'));
  const child = spawn(
    process.execPath,
    [
      PROXY,
      admin.url.toString(),
      String(await freePort()),
      '--host',
      '127.0.0.1',
      '--header',
      `Authorization: Bearer ${token}`,
    ],
    { env: { ...remoteEnv(), HOME: ownDir, MCP_REMOTE_CONFIG_DIR: ownDir }, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let stderr = '';
  // The MCP authorization specification: a refused token is 401, and the client may get a new one by OAuth.
  const offered = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 30_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/Please authorize this client by visiting:/.test(stderr)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  child.kill('SIGKILL');
  rmSync(ownDir, { recursive: true, force: true });
  expect(offered, stderr).toBe(true);
  const [event] = await db.sql<{ outcome: string; summary: Record<string, unknown> }[]>`
    select outcome, result_summary as summary from audit_events
    where server = 'admin' and result_summary->>'presented_token_id' = ${id} order by seq limit 1`;
  expect(event).toEqual({
    outcome: 'unauthorized',
    summary: { status: 401, reason: 'revoked', presented_token_id: id },
  });
}, 60_000);
