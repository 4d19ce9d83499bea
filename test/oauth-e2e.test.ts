import { createServer as createHttpServer, type Server } from 'node:http';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { issueToken, parseToken, revokeToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';

// The SDK's own OAuth client against the real console and customer server, each its own process
// configured by its environment; the consent page is clicked in Chromium.

let db: TestDatabase;
let customer: ServerProcess;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;
let granterToken: string;
let callback: Server;
let callbackUrl: string;
let arrived: (params: URLSearchParams) => void = () => {};

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const [consolePort, customerPort, adminPort, callbackPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  const oauth = { BULKHEAD_AUTHORIZATION_SERVER: consoleUrl };
  [customer, admin, consoleServer] = await Promise.all([
    spawnServer('customer', (await db.as('customer')).url, oauth, customerPort),
    spawnServer('admin', (await db.as('admin')).url, oauth, adminPort),
    spawnServer(
      'console',
      (await db.as('console')).url,
      {
        BULKHEAD_SERVER_URLS: `customer=http://127.0.0.1:${customerPort},admin=http://127.0.0.1:${adminPort}`,
      },
      consolePort,
    ),
  ]);
  granterToken = (
    await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'Ana Berg (support lead)',
      scopes: ['approvals:decide', 'grants:issue'],
      expiresAt: null,
      createdBy: 'test',
      owner: 'ana@example.test',
    })
  ).token;
  callback = createHttpServer((req, res) => {
    const url = new URL(req.url!, 'http://127.0.0.1');
    res.setHeader('content-type', 'text/plain');
    res.end('Signed in; you may close this window.');
    if (url.pathname === '/callback') arrived(url.searchParams);
  });
  await new Promise<void>((resolve) => callback.listen(callbackPort, '127.0.0.1', resolve));
  callbackUrl = `http://127.0.0.1:${callbackPort}/callback`;
  browser = await chromium.launch(chromiumLaunchOptions());
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => callback?.close(resolve));
  await Promise.all([customer?.stop(), admin?.stop(), consoleServer?.stop()]);
  await db.drop();
});

/** An in-memory OAuth client provider: what a desktop client keeps in its settings. */
class MemoryProvider implements OAuthClientProvider {
  info: StoredOAuthClientInformation | undefined;
  saved: StoredOAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get redirectUrl() {
    return callbackUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK Test Client',
      redirect_uris: [callbackUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

/** Opens the authorization URL in Chromium, signs in as the granter, picks the customer and allows. */
async function consentInBrowser(url: URL, customerId: string | null): Promise<URLSearchParams> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const back = new Promise<URLSearchParams>((resolve) => (arrived = resolve));
  await page.goto(url.toString());
  await page.getByLabel('Approver token').fill(granterToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: /^Grant access to / }).waitFor();
  const shown = {
    heading: await page.getByRole('heading', { level: 1 }).textContent(),
    client: await page.locator('#consent-client').textContent(),
    scopes: await page.locator('#consent-scopes').textContent(),
  };
  if (customerId) await page.getByLabel('Customer').selectOption(customerId);
  await page.screenshot({ path: '/tmp/bulkhead-oauth-consent.png' });
  await page.getByRole('button', { name: 'Allow' }).click();
  const params = await back;
  await page.waitForURL(/\/callback\?/);
  await context.close();
  return Object.assign(params, { shown });
}

it("the SDK's OAuth client gets a customer-bound token through the consent page in Chromium, then lists and calls tools", async () => {
  const provider = new MemoryProvider();
  const client = new Client({ name: 'sdk-oauth-e2e', version: '1.0.0' });
  const first = new StreamableHTTPClientTransport(customer.url, { authProvider: provider });
  await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
  const url = provider.authorizationUrl!;
  expect(url.origin).toBe(consoleServer.url.origin);
  expect(url.searchParams.get('resource')).toBe(customer.url.toString());
  expect(url.searchParams.get('code_challenge_method')).toBe('S256');

  const params = await consentInBrowser(url, 'C-1001');
  expect((params as unknown as { shown: unknown }).shown).toEqual({
    heading: 'Grant access to customer?',
    client: 'SDK Test Client',
    scopes: 'account:read, invoices:read, tickets:read, tickets:write',
  });
  expect(params.get('iss')).toBe(consoleServer.url.origin);
  await first.finishAuth(params.get('code')!, params.get('iss')!);
  expect(provider.saved!.access_token).toMatch(/^bho_customer_/);

  const connected = new Client({ name: 'sdk-oauth-e2e', version: '1.0.0' });
  await connected.connect(new StreamableHTTPClientTransport(customer.url, { authProvider: provider }));
  const tools = await connected.listTools();
  expect(tools.tools.map((t) => t.name)).toContain('get_account_balance');
  const balance = await connected.callTool({ name: 'get_account_balance', arguments: {} });
  expect(balance.isError).toBeFalsy();
  expect((balance.structuredContent as { customer_id: string }).customer_id).toBe('C-1001');
  await connected.close();

  // The grant is a token like any other: listed, bound to customer and C-1001, and audited by id.
  const id = parseToken(provider.saved!.access_token)!.id;
  const [row] = await db.sql<{ server: string; customer_id: string; owner: string; grant_id: string }[]>`
    select server, customer_id, owner, grant_id from bulkhead_tokens where id = ${id}`;
  expect(row).toMatchObject({ server: 'customer', customer_id: 'C-1001', owner: 'ana@example.test' });
  const events = await db.sql<{ method: string; outcome: string }[]>`
    select method, outcome from audit_events where token_id = ${id} and method = 'tools/call'`;
  expect(events).toEqual([{ method: 'tools/call', outcome: 'ok' }]);

  // Audience binding: the customer grant's token is refused by admin, and the refusal is audited.
  const refused = await post(admin.url, provider.saved!.access_token);
  expect(refused.status).toBe(401);
  expect(refused.headers.get('www-authenticate')).toContain(
    `resource_metadata="${admin.url.origin}/.well-known/oauth-protected-resource/mcp"`,
  );
  await expect
    .poll(
      async () =>
        (
          await db.sql<{ outcome: string; summary: { reason: string } }[]>`
            select outcome, result_summary as summary from audit_events
            where server = 'admin' and result_summary->>'presented_token_id' = ${id}`
        ).map((e) => [e.outcome, e.summary.reason]),
      { timeout: 5000 },
    )
    .toEqual([['unauthorized', 'wrong_server']]);

  // `tokens revoke` ends the grant: the customer server answers 401 with the metadata (the client may
  // authorize again), the refresh token is dead, and both refusals are audited.
  expect(await revokeToken(db.sql, id)).toBe(true);
  await expect
    .poll(async () => (await post(customer.url, provider.saved!.access_token)).status, { timeout: 3000 })
    .toBe(401);
  await expect
    .poll(
      async () =>
        (
          await db.sql<{ summary: { reason: string; status: number } }[]>`
            select result_summary as summary from audit_events
            where server = 'customer' and token_id = ${id} and outcome = 'unauthorized'`
        ).map((e) => [e.summary.status, e.summary.reason]),
      { timeout: 5000 },
    )
    .toContainEqual([401, 'revoked']);
  const refreshed = await fetch(`${consoleServer.url.origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: provider.saved!.refresh_token!,
      client_id: provider.info!.client_id,
    }),
  });
  expect(await refreshed.json()).toEqual({
    error: 'invalid_grant',
    error_description: 'The grant was revoked.',
  });
}, 120_000);

/** A tools/list with `token` as the bearer token, answered as it comes. */
function post(url: URL, token: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });
}

it('each MCP server publishes its protected-resource metadata naming the console', async () => {
  const res = await fetch(`${customer.url.origin}/.well-known/oauth-protected-resource/mcp`);
  expect(await res.json()).toEqual({
    resource: customer.url.toString(),
    authorization_servers: [consoleServer.url.origin],
    scopes_supported: ['account:read', 'invoices:read', 'tickets:read', 'tickets:write'],
    bearer_methods_supported: ['header'],
    resource_name: 'Bulkhead customer',
  });
  const unauthenticated = await fetch(customer.url, { method: 'POST' });
  expect(unauthenticated.status).toBe(401);
  expect(unauthenticated.headers.get('www-authenticate')).toBe(
    `Bearer realm="customer", resource_metadata="${customer.url.origin}/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="The access token is missing, malformed, unknown, expired, revoked or issued for another server"`,
  );
});
