import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { approverToken, oauthGrant } from '../../fixtures/people.ts';
import { serveConsole, type ServedConsole } from '../../fixtures/served-console.ts';

// An operator in a real browser: offboards a person (two MCP tokens and an OAuth grant) through the
// confirmation page, after which a real MCP server refuses all three tokens; and issues a token
// through the form that a real MCP client then uses.

/** Tells the caller who its token says it is: what the server knows of the token. */
const whoAmI = defineTool({
  name: 'who_am_i',
  title: 'Who am I',
  description: 'The label, person and scopes of the token the call carries.',
  scope: 'fleet:read',
  input: z.object({}),
  output: z.object({ label: z.string(), owner: z.string().nullable(), scopes: z.array(z.string()) }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  handler: async (_args, ctx) => ({
    label: ctx.access.label,
    owner: ctx.access.owner ?? null,
    scopes: [...ctx.access.scopes],
  }),
});
const fleet = createServer({
  name: 'fleet-demo',
  version: '1.0.0',
  description: 'A server for the operator browser test.',
  tools: [whoAmI],
});
const SCOPES = ['fleet:read', 'fleet:write'];
const ANA = 'ana@example.test';

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let mcp: TestServer;
let served: ServedConsole;
let browser: Browser;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  mcp = await startTestServer(fleet, { db, logger });
  served = await serveConsole(db, logger, [
    {
      name: 'fleet-demo',
      description: 'vehicles',
      resource: mcp.url.toString(),
      scopes: SCOPES,
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

/** The HTTP status the MCP server answers an `initialize` carrying `token` with. */
async function mcpStatus(token: string): Promise<number> {
  const res = await fetch(mcp.url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'probe', version: '1' },
      },
    }),
  });
  await res.body?.cancel();
  return res.status;
}

/** Calls `who_am_i` with a real MCP client carrying `token`. */
async function whoIs(token: string) {
  const client = new Client({ name: 'operator-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(mcp.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  const result = await client.callTool({ name: 'who_am_i', arguments: {} });
  await client.close();
  return result.structuredContent;
}

async function signIn(page: Page) {
  const operator = await approverToken(db, 'olga@example.test', ['approvals:decide', 'tokens:manage']);
  await page.goto(`${base}/login`);
  await page.getByLabel('Approver token').fill(operator.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
}

it('an operator revokes everything of a person, and the MCP server refuses all three of their tokens', async () => {
  const claude = await issueTestToken(db.sql, fleet, { label: 'Claude Code (Ana)', owner: ANA });
  const cursor = await issueTestToken(db.sql, fleet, {
    label: 'Cursor (Ana)',
    owner: `  ${ANA.toUpperCase()}`,
  });
  const bos = await issueTestToken(db.sql, fleet, { label: 'Claude Code (Bo)', owner: 'bo@example.test' });
  const granter = await approverToken(db, 'greta@example.test', ['approvals:decide', 'grants:issue']);
  const grant = await oauthGrant(db, {
    server: 'fleet-demo',
    scopes: SCOPES,
    person: ANA,
    clientName: 'Zed editor',
    grantedBy: { tokenId: granter.tokenId, label: 'greta@example.test' },
  });
  const anas = [claude, cursor, grant.token];
  for (const token of [...anas, bos]) expect(await mcpStatus(token)).toBe(200);

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await signIn(page);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Tokens' }).click();
  await page.getByRole('heading', { name: 'Tokens and grants' }).waitFor();
  await page.getByLabel('Search').fill('ana@');
  await page.getByRole('button', { name: 'Filter' }).click();
  const tokens = page.getByRole('region', { name: 'Tokens' });
  // Ana's two tokens and the grant's access token; Bo's is filtered out.
  expect(await tokens.locator('tbody tr').count()).toBe(3);
  await page.screenshot({ path: '/tmp/bulkhead-console-operator-tokens.png', fullPage: true });

  // The person as one token names them, trimmed and in capitals, is the same person.
  await tokens.getByRole('link', { name: ANA.toUpperCase(), exact: true }).click();
  await page.getByRole('heading', { name: `Tokens and grants of ${ANA.toUpperCase()}` }).waitFor();
  expect(await page.getByRole('region', { name: 'Tokens' }).locator('tbody tr').count()).toBe(3);
  const grants = page.getByRole('region', { name: 'OAuth grants' });
  expect(await grants.locator('tbody tr').allTextContents()).toEqual([expect.stringContaining('Zed editor')]);

  await page.getByRole('link', { name: 'Revoke everything of this person' }).click();
  await page.getByRole('heading', { name: `Revoke everything of ${ANA.toUpperCase()}?` }).waitFor();
  const named = (await page.locator('#revoke-tokens li').allTextContents()).sort();
  expect(named).toEqual([
    expect.stringMatching(/^Claude Code \(Ana\) — token for fleet-demo \(\w{12}\)$/),
    expect.stringMatching(/^Cursor \(Ana\) — token for fleet-demo \(\w{12}\)$/),
    expect.stringMatching(
      new RegExp(
        `^Zed editor \\(OAuth grant ${grant.grantId}\\) — token for fleet-demo \\(\\w{12}, of OAuth grant`,
      ),
    ),
  ]);
  expect(await page.locator('#revoke-grants li').allTextContents()).toEqual([
    `Zed editor on fleet-demo (${grant.grantId}), with its refresh tokens`,
  ]);
  await page.screenshot({ path: '/tmp/bulkhead-console-operator-revoke-person.png', fullPage: true });
  await page.getByRole('button', { name: 'Revoke all 4' }).click();
  expect(await page.getByRole('status').textContent()).toBe(
    'Revoked 2 tokens and 1 OAuth grant (with their access tokens) of this person. Their servers refuse them from the next request on.',
  );

  // Each server's token cache learns of a revocation by NOTIFY, and reuses a verdict for under a second.
  const deadline = Date.now() + 5000;
  let statuses = await Promise.all(anas.map(mcpStatus));
  while (statuses.some((s) => s !== 401) && Date.now() < deadline) {
    await sleep(50);
    statuses = await Promise.all(anas.map(mcpStatus));
  }
  expect(statuses).toEqual([401, 401, 401]);
  expect(await mcpStatus(bos)).toBe(200);
  const [event] = await db.sql`
    select outcome, arguments->>'person' as person, arguments->>'owner' as owner, result_summary
    from audit_events where method = 'console/operator' and tool = 'revoke_person'`;
  expect(event).toMatchObject({
    outcome: 'ok',
    person: 'olga@example.test',
    owner: ANA.toUpperCase(),
    result_summary: { tokens: 2, grants: 1 },
  });
  await context.close();
});

it('an operator issues a token through the form, and a real MCP client uses it', async () => {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await signIn(page);
  await page.goto(`${base}/operator/tokens`);
  await page.getByRole('link', { name: 'Issue a token' }).click();
  await page.getByLabel('Server').selectOption('fleet-demo');
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Label').fill('Claude Desktop (Cem)');
  await page.getByLabel('Person').fill('cem@example.test');
  await page.getByLabel('fleet:write').uncheck();
  await page.getByLabel('Expires after').selectOption('30d');
  const answer = page.waitForResponse((r) => r.request().method() === 'POST');
  await page.getByRole('button', { name: 'Issue the token' }).click();
  const response = await answer;
  expect(response.status()).toBe(200);
  expect(response.headers()['cache-control']).toBe('no-store');
  await page.getByRole('heading', { name: 'Token issued' }).waitFor();
  const token = (await page.locator('#token').textContent())!;
  expect(token).toMatch(/^bh_fleet-demo_[a-z2-9]{12}_[\w-]{43}$/);
  expect(
    await page.getByRole('region', { name: 'Claude Code configuration' }).locator('pre').textContent(),
  ).toBe(`claude mcp add --transport http fleet-demo ${mcp.url} --header "Authorization: Bearer ${token}"`);
  await page.screenshot({ path: '/tmp/bulkhead-console-operator-issued.png', fullPage: true });

  expect(await whoIs(token)).toEqual({
    label: 'Claude Desktop (Cem)',
    owner: 'cem@example.test',
    scopes: ['fleet:read'],
  });
  const [row] = await db.sql<{ expiresInDays: number; createdBy: string }[]>`
    select round(extract(epoch from expires_at - created_at) / 86400)::int as "expiresInDays",
      created_by as "createdBy"
    from bulkhead_tokens where label = 'Claude Desktop (Cem)'`;
  expect(row).toEqual({ expiresInDays: 30, createdBy: 'console: olga@example.test' });
  const [event] = await db.sql`
    select outcome, arguments->>'owner' as owner, result_summary->>'token_id' as token_id
    from audit_events where method = 'console/operator' and tool = 'issue_token'`;
  expect(event).toEqual({ outcome: 'ok', owner: 'cem@example.test', token_id: token.split('_')[2] });
  await context.close();
});
