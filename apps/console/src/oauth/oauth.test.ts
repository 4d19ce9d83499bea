import { createHash, randomBytes } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@bulkhead/core';
import { createTokenVerifier, getToken, issueToken, parseToken, revokeToken } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../app.tsx';
import { createSession } from '../sessions.ts';
import { isPublicAddress } from './clients.ts';

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';
const ADMIN = 'http://127.0.0.1:3101/mcp';
const CUSTOMER = 'http://127.0.0.1:3102/mcp';
const REDIRECT = 'http://127.0.0.1:9999/callback';

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let granter: { cookie: string; csrf: string };
let decider: { cookie: string; csrf: string };
let metadataServer: Server;
let metadataUrl: string;
const hungUp = new Set<string>();

async function signedIn(scopes: string[], person: string) {
  const { token, record } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: person,
    scopes,
    expiresAt: null,
    createdBy: 'test',
    owner: person,
  });
  const sid = await createSession(consoleSql, token, 1);
  const [row] = await db.sql<
    { csrf: string }[]
  >`select csrf from bulkhead_console_sessions where token_id = ${record.id}`;
  return { cookie: `bh_session=${sid}`, csrf: row!.csrf };
}

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`insert into customers (id, name, email, language) values ('C-1001', 'Acme GmbH', 'ap@acme.test', 'de')`;
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: ORIGIN,
    oauthServers: [
      {
        name: 'admin',
        description: 'billing',
        resource: ADMIN,
        scopes: ['billing:read', 'tickets:read'],
        customerBound: false,
      },
      {
        name: 'customer',
        description: 'one customer',
        resource: CUSTOMER,
        scopes: ['account:read'],
        customerBound: true,
      },
    ],
  });
  granter = await signedIn(['approvals:decide', 'grants:issue'], 'ana@example.test');
  decider = await signedIn(['approvals:decide'], 'bo@example.test');
  metadataServer = createHttpServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/endless.json' || req.url === '/declared.json') {
      // A document that never ends (or says it is 10 MB): 16 KiB every 5 ms until the reader hangs up.
      if (req.url === '/declared.json') res.setHeader('content-length', String(10 * 1024 * 1024));
      res.write(`{"client_id": "${metadataUrl}", "padding": "`);
      const timer = setInterval(() => res.write('x'.repeat(16 * 1024)), 5);
      res.on('close', () => {
        clearInterval(timer);
        hungUp.add(req.url!);
      });
      return;
    }
    res.end(
      JSON.stringify({
        client_id: metadataUrl,
        client_name: 'Metadata Client',
        redirect_uris: [REDIRECT],
        token_endpoint_auth_method: 'none',
      }),
    );
  });
  await new Promise<void>((resolve) => metadataServer.listen(0, '127.0.0.1', resolve));
  metadataUrl = `http://127.0.0.1:${(metadataServer.address() as AddressInfo).port}/client.json`;
});

afterAll(async () => {
  await new Promise((resolve) => metadataServer.close(resolve));
  await consoleApp.close();
  await db.drop();
});

const request = (path: string, init: RequestInit = {}) =>
  consoleApp.app.request(`${ORIGIN}${path}`, {
    ...init,
    headers: { host: '127.0.0.1:3100', ...init.headers },
  });

const form = (fields: Record<string, string | undefined>) =>
  new URLSearchParams(Object.entries(fields).filter((e): e is [string, string] => e[1] !== undefined));

const token = (fields: Record<string, string | undefined>) =>
  request('/oauth/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: form(fields),
  });

async function register(redirectUris = [REDIRECT]): Promise<string> {
  const res = await request('/oauth/register', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Test Client',
      redirect_uris: redirectUris,
      token_endpoint_auth_method: 'none',
    }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as { client_id: string }).client_id;
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

function authorizeQuery(clientId: string, challenge: string, extra: Record<string, string> = {}) {
  return form({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 'st-1',
    resource: ADMIN,
    ...extra,
  }).toString();
}

/** Consent given by the granter; returns the code from the redirect. */
async function consent(
  clientId: string,
  challenge: string,
  extra: Record<string, string> = {},
): Promise<string> {
  const q = Object.fromEntries(new URLSearchParams(authorizeQuery(clientId, challenge, extra)));
  const res = await request('/oauth/authorize', {
    method: 'POST',
    headers: { cookie: granter.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    body: form({ ...q, scope: extra.scope ?? '', _csrf: granter.csrf, decision: 'allow' }),
  });
  expect(res.status).toBe(303);
  const location = new URL(res.headers.get('location')!);
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
  expect(location.searchParams.get('state')).toBe('st-1');
  expect(location.searchParams.get('iss')).toBe(ORIGIN);
  return location.searchParams.get('code')!;
}

async function lastEvent(method: string) {
  const [e] = await db.sql<{ outcome: string; summary: Record<string, unknown> }[]>`
    select outcome, result_summary as summary from audit_events where method = ${method} order by seq desc limit 1`;
  return e!;
}

async function exchange(clientId: string, code: string, verifier: string | undefined) {
  return token({
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    redirect_uri: REDIRECT,
    code_verifier: verifier,
    resource: ADMIN,
  });
}

async function verdict(server: string, presented: string) {
  const verifier = createTokenVerifier((await db.as(server)).sql, server, 'mcp', {
    listen: false,
    maxAgeMs: 0,
  });
  try {
    return await verifier.verify(presented);
  } finally {
    await verifier.close();
  }
}

describe('metadata and registration', () => {
  it('publishes RFC 8414 metadata with S256 only and Client ID Metadata Documents', async () => {
    const res = await request('/.well-known/oauth-authorization-server');
    expect(await res.json()).toEqual({
      issuer: ORIGIN,
      authorization_endpoint: `${ORIGIN}/oauth/authorize`,
      token_endpoint: `${ORIGIN}/oauth/token`,
      registration_endpoint: `${ORIGIN}/oauth/register`,
      revocation_endpoint: `${ORIGIN}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: ['account:read', 'billing:read', 'tickets:read'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    });
  });

  it("answers a browser-based client's preflight for the token endpoint", async () => {
    const res = await request('/oauth/token', {
      method: 'OPTIONS',
      headers: { origin: 'https://inspector.example', 'access-control-request-method': 'POST' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('POST');
  });

  it('refuses to register a confidential client or a non-loopback http redirect, and audits it', async () => {
    for (const [body, error] of [
      [
        { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' },
        'invalid_client_metadata',
      ],
      [{ redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    ] as const) {
      const res = await request('/oauth/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe(error);
      expect(await lastEvent('oauth/register')).toMatchObject({
        outcome: 'bad_request',
        summary: { reason: error },
      });
    }
  });

  it('limits registrations per source address, says when to retry, and audits the first refusal of the window', async () => {
    // Behind one proxy: the address it appends to X-Forwarded-For is the source.
    const limited = createConsoleApp({
      sql: consoleSql,
      logger,
      publicUrl: ORIGIN,
      proxyHops: 1,
      registrationPolicy: { registrations: 2, windowSeconds: 60 },
    });
    try {
      const registerFrom = (address: string) =>
        limited.app.request(`${ORIGIN}/oauth/register`, {
          method: 'POST',
          headers: { host: '127.0.0.1:3100', 'content-type': 'application/json', 'x-forwarded-for': address },
          body: JSON.stringify({ client_name: 'Flood', redirect_uris: [REDIRECT] }),
        });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await registerFrom('203.0.113.7')).status);
      expect(statuses).toEqual([201, 201, 429, 429]);
      const refused = await registerFrom('203.0.113.7');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(await refused.json()).toMatchObject({
        error: 'invalid_request',
        error_description: expect.stringContaining('Too many client registrations from this address'),
      });
      // Another address is counted on its own.
      expect((await registerFrom('198.51.100.20')).status).toBe(201);
      const events = await db.sql<{ summary: Record<string, unknown> }[]>`
        select result_summary as summary from audit_events
        where method = 'oauth/register' and outcome = 'rate_limited'`;
      expect(events.map((e) => e.summary)).toEqual([
        { reason: 'registration_limit', source: '203.0.113.7', limit: '2 per 60 s' },
      ]);
    } finally {
      await limited.close();
    }
  });
});

describe('the consent page', () => {
  it('sends a person who is not signed in to sign in, and back', async () => {
    const clientId = await register();
    const path = `/oauth/authorize?${authorizeQuery(clientId, pkce().challenge)}`;
    const res = await request(path);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/login?next=${encodeURIComponent(path)}`);
    const login = await request(res.headers.get('location')!);
    expect(await login.text()).toContain(`name="next" value="${path.replaceAll('&', '&amp;')}"`);
  });

  it('names the client, the server and the scopes, and lets the form answer go back to the client', async () => {
    const clientId = await register();
    const res = await request(
      `/oauth/authorize?${authorizeQuery(clientId, pkce().challenge, { scope: 'billing:read' })}`,
      {
        headers: { cookie: granter.cookie },
      },
    );
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('Grant access to admin?');
    expect(body).toContain('Test Client');
    expect(body).toContain('<code>billing:read</code>');
    expect(body).not.toContain('tickets:read');
    expect(res.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9999;");
  });

  it('fetches a Client ID Metadata Document and names the client it describes', async () => {
    const res = await request(`/oauth/authorize?${authorizeQuery(metadataUrl, pkce().challenge)}`, {
      headers: { cookie: granter.cookie },
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Metadata Client');
  });

  it('refuses a metadata document over 64 KiB as soon as it is, and hangs up on it', async () => {
    const base = new URL(metadataUrl).origin;
    for (const path of ['/endless.json', '/declared.json']) {
      const res = await request(`/oauth/authorize?${authorizeQuery(`${base}${path}`, pkce().challenge)}`, {
        headers: { cookie: granter.cookie },
      });
      expect(res.status).toBe(400);
      // A loopback document's failure is not described on the page; the audit log keeps the detail.
      expect(await res.text()).toContain('could not be used (no detail is given for loopback addresses)');
      expect((await lastEvent('oauth/authorize')).summary.detail).toContain(
        'could not be read (larger than 64 KiB)',
      );
      await expect.poll(() => hungUp.has(path)).toBe(true);
    }
  });

  it('fetches no metadata document from an address inside the network, named or literal', async () => {
    for (const [clientId, address] of [
      ['https://127.0.0.1/client.json', '127.0.0.1'],
      ['https://10.1.2.3/client.json', '10.1.2.3'],
      ['https://169.254.169.254/latest/meta-data/client', '169.254.169.254'],
      ['https://[::1]/client.json', '::1'],
      ['https://[::127.0.0.1]/client.json', '::7f00:1'],
      ['https://[::ffff:0:7f00:1]/client.json', '::ffff:0:7f00:1'],
      ['https://[64:ff9b:1::7f00:1]/client.json', '64:ff9b:1::7f00:1'],
      ['https://[fec0::1]/client.json', 'fec0::1'],
      ['https://[2002:7f00:1::1]/client.json', '2002:7f00:1::1'],
      ['https://localhost/client.json', /127\.0\.0\.1|::1/],
    ] as const) {
      const res = await request(`/oauth/authorize?${authorizeQuery(clientId, pkce().challenge)}`, {
        headers: { cookie: granter.cookie },
      });
      expect(res.status, clientId).toBe(400);
      const page = await res.text();
      expect(page, clientId).toContain('is not a public address (');
      expect(page, clientId).toMatch(address);
    }
  });

  it('knows which addresses are public', () => {
    const publicOnes = ['8.8.8.8', '172.32.0.1', '100.128.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8'];
    const inside = [
      '0.0.0.0',
      '10.0.0.1',
      '100.64.1.1',
      '127.0.0.2',
      '169.254.169.254',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '198.18.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      'fd00::1',
      'fe80::1',
      'ff02::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '64:ff9b::a00:1',
      '::127.0.0.1',
      '::7f00:1',
      '::ffff:0:7f00:1',
      '64:ff9b:1::7f00:1',
      'fec0::1',
      '2002:7f00:1::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '2001:db8::1',
      '3fff::1',
      '100::1',
      '192.0.2.1',
      '240.0.0.1',
    ];
    expect(publicOnes.filter((a) => !isPublicAddress(a))).toEqual([]);
    expect(inside.filter((a) => isPublicAddress(a))).toEqual([]);
    expect(isPublicAddress('not an address')).toBe(false);
  });

  it('refuses a redirect URI the client did not register, without redirecting, and audits it', async () => {
    const clientId = await register();
    const res = await request(
      `/oauth/authorize?${authorizeQuery(clientId, pkce().challenge, { redirect_uri: 'http://attacker.example/cb' })}`,
      { headers: { cookie: granter.cookie } },
    );
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('Redirect address not registered');
    expect(await lastEvent('oauth/authorize')).toEqual({
      outcome: 'forbidden',
      summary: { reason: 'redirect_uri_not_registered', redirect_uri: 'http://attacker.example/cb' },
    });
  });

  it('refuses an approver who may not grant, and audits it', async () => {
    const clientId = await register();
    const res = await request(`/oauth/authorize?${authorizeQuery(clientId, pkce().challenge)}`, {
      headers: { cookie: decider.cookie },
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('You may not grant access');
    expect(await lastEvent('oauth/authorize')).toEqual({
      outcome: 'forbidden',
      summary: { reason: 'may_not_grant' },
    });
  });

  it('refuses a request without PKCE S256 on a page; back to the client only once it holds a grant', async () => {
    const clientId = await register();
    const plain = `/oauth/authorize?${authorizeQuery(clientId, 'x'.repeat(43), { code_challenge_method: 'plain' })}`;
    // Registration is open to anyone: a client no one has granted is never trusted with a redirect.
    const shown = await request(plain, { headers: { cookie: granter.cookie } });
    expect(shown.status).toBe(400);
    expect(shown.headers.get('location')).toBeNull();
    expect(await shown.text()).toContain(
      `request cannot be granted (invalid_request): PKCE is required: code_challenge with code_challenge_method=S256. Nothing was granted; the client was not sent back to ${REDIRECT}.`,
    );
    expect(await lastEvent('oauth/authorize')).toEqual({
      outcome: 'bad_request',
      summary: { reason: 'pkce', redirected: false },
    });
    await consent(clientId, pkce().challenge);
    const res = await request(plain, { headers: { cookie: granter.cookie } });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(await lastEvent('oauth/authorize')).toEqual({
      outcome: 'bad_request',
      summary: { reason: 'pkce', redirected: true },
    });
  });

  it('registers only https, loopback http or a reverse-domain private scheme; never a fragment or credentials', async () => {
    const refused = [
      'ws://example.com/cb',
      'mailto:someone@example.com',
      'view-source:https://example.com/',
      'javascript:alert(1)',
      'myapp:/cb',
      'https://example.com/cb#',
      'https://example.com/cb#frag',
      'https://user@example.com/cb',
      'https://@example.com/cb',
      'http://user:pw@127.0.0.1:9999/callback',
    ];
    for (const uri of refused) {
      const res = await request('/oauth/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [uri] }),
      });
      expect([uri, res.status, ((await res.json()) as { error: string }).error]).toEqual([
        uri,
        400,
        'invalid_redirect_uri',
      ]);
    }
    await register(['com.example.app:/callback', 'https://app.example.com/cb', REDIRECT]);
  });

  it('refuses at authorize a loopback redirect URI with a fragment or a user name, on a page', async () => {
    const clientId = await register();
    for (const uri of [
      'http://127.0.0.1:5555/callback#x',
      'http://127.0.0.1:5555/callback#',
      'http://user@127.0.0.1:5555/callback',
      'http://@127.0.0.1:9999/callback',
    ]) {
      const res = await request(
        `/oauth/authorize?${authorizeQuery(clientId, pkce().challenge, { redirect_uri: uri })}`,
        { headers: { cookie: granter.cookie } },
      );
      expect([uri, res.status, res.headers.get('location')]).toEqual([uri, 400, null]);
      expect(await res.text()).toContain('Redirect address not registered');
    }
    // A client registered before these rules, with a scheme no app owns: its redirect is not used either.
    await db.sql`insert into bulkhead_oauth_clients (client_id, source, redirect_uris)
      values ('bhc_old_ws_client', 'registered', ${['ws://evil.example/cb']})`;
    const old = await request(
      `/oauth/authorize?${authorizeQuery('bhc_old_ws_client', pkce().challenge, { redirect_uri: 'ws://evil.example/cb' })}`,
      { headers: { cookie: granter.cookie } },
    );
    expect([old.status, old.headers.get('location')]).toEqual([400, null]);
    expect(await old.text()).toContain('Redirect address not registered');
  });

  it('tells nothing of what a loopback address answered when its metadata document fails', async () => {
    // A port that was open a moment ago and is closed now.
    const gone = createHttpServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const closedPort = `http://127.0.0.1:${(gone.address() as AddressInfo).port}/client.json`;
    await new Promise((resolve) => gone.close(resolve));
    const pages: string[] = [];
    const live = createHttpServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<html>SSH-2.0-OpenSSH_9.6 internal admin panel</html>');
    });
    await new Promise<void>((resolve) => live.listen(0, '127.0.0.1', resolve));
    const livePort = `http://127.0.0.1:${(live.address() as AddressInfo).port}/client.json`;
    try {
      for (const clientId of [livePort, closedPort]) {
        const res = await request(`/oauth/authorize?${authorizeQuery(clientId, pkce().challenge)}`, {
          headers: { cookie: granter.cookie },
        });
        expect(res.status).toBe(400);
        pages.push((await res.text()).replaceAll(clientId, 'CLIENT'));
      }
    } finally {
      await new Promise((resolve) => live.close(resolve));
    }
    expect(pages[0]).not.toContain('SSH-2.0');
    expect(pages[0]).not.toContain('not valid JSON');
    expect(pages[0]).toContain('could not be used (no detail is given for loopback addresses)');
    // An open port and a closed one read the same.
    expect(pages[0]).toBe(pages[1]);
  });

  it('binds a customer-server grant to the customer chosen on the page', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const page = await request(
      `/oauth/authorize?${authorizeQuery(clientId, challenge, { resource: CUSTOMER })}`,
      {
        headers: { cookie: granter.cookie },
      },
    );
    expect(await page.text()).toContain('<option value="C-1001">C-1001 — Acme GmbH</option>');
    const code = await consent(clientId, challenge, { resource: CUSTOMER, customer_id: 'C-1001' });
    const res = await token({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      resource: CUSTOMER,
    });
    const body = (await res.json()) as { access_token: string; scope: string };
    expect(body.scope).toBe('account:read');
    const v = await verdict('customer', body.access_token);
    expect(v).toMatchObject({
      ok: true,
      access: { server: 'customer', customerId: 'C-1001', owner: 'ana@example.test' },
    });
  });
});

describe('the token endpoint', () => {
  it('exchanges a code once for a per-access token bound to the server', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const code = await consent(clientId, challenge);
    const res = await exchange(clientId, code, verifier);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      token_type: 'Bearer',
      expires_in: 3600,
      scope: 'billing:read tickets:read',
    });
    expect(body.access_token).toMatch(/^bho_admin_[a-z2-9]{12}_/);
    expect(body.refresh_token).toMatch(/^bhr_/);
    const record = (await getToken(db.sql, parseToken(body.access_token as string)!.id))!;
    expect(record).toMatchObject({
      kind: 'mcp',
      server: 'admin',
      label: 'Test Client (OAuth grant ' + record.grantId + ')',
      owner: 'ana@example.test',
      createdBy: 'oauth:ana@example.test',
    });
    expect((await verdict('admin', body.access_token as string)).ok).toBe(true);
    // Audience binding: the admin grant's token is not the customer server's.
    expect(await verdict('customer', body.access_token as string)).toMatchObject({
      ok: false,
      reason: 'wrong_server',
    });
  });

  it('refuses a replayed code, revokes what it opened, and audits it', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const code = await consent(clientId, challenge);
    const first = (await (await exchange(clientId, code, verifier)).json()) as { access_token: string };
    const again = await exchange(clientId, code, verifier);
    expect(again.status).toBe(400);
    expect(await again.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'The code was already used; its grant is revoked.',
    });
    expect(await lastEvent('oauth/token')).toMatchObject({
      outcome: 'bad_request',
      summary: { reason: 'code_replayed' },
    });
    expect(await verdict('admin', first.access_token)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  it('refuses a missing or wrong PKCE verifier, and audits each', async () => {
    const clientId = await register();
    for (const [presented, reason] of [
      [undefined, 'pkce_verifier_missing'],
      [pkce().verifier, 'pkce_verifier_mismatch'],
    ] as const) {
      const { challenge } = pkce();
      const code = await consent(clientId, challenge);
      const res = await exchange(clientId, code, presented);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe('invalid_grant');
      expect(await lastEvent('oauth/token')).toEqual({
        outcome: 'bad_request',
        summary: { reason, grant_type: 'authorization_code' },
      });
    }
  });

  it('refuses a code for another resource or redirect URI', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const code = await consent(clientId, challenge);
    const res = await token({
      grant_type: 'authorization_code',
      client_id: clientId,
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
      resource: CUSTOMER,
    });
    expect(((await res.json()) as { error: string }).error).toBe('invalid_target');
    const other = pkce();
    const code2 = await consent(clientId, other.challenge);
    const res2 = await token({
      grant_type: 'authorization_code',
      client_id: clientId,
      code: code2,
      redirect_uri: 'http://127.0.0.1:9999/other',
      code_verifier: other.verifier,
    });
    expect(await lastEvent('oauth/token')).toMatchObject({ summary: { reason: 'redirect_uri_mismatch' } });
    expect(res2.status).toBe(400);
  });

  it('rotates refresh tokens, and a reused one revokes the whole grant (audited)', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkce();
    const first = (await (await exchange(clientId, await consent(clientId, challenge), verifier)).json()) as {
      refresh_token: string;
    };
    const refresh = (rt: string) =>
      token({ grant_type: 'refresh_token', client_id: clientId, refresh_token: rt, resource: ADMIN });
    const second = (await (await refresh(first.refresh_token)).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await verdict('admin', second.access_token)).ok).toBe(true);
    const reused = await refresh(first.refresh_token);
    expect(reused.status).toBe(400);
    expect(await reused.json()).toEqual({
      error: 'invalid_grant',
      error_description: 'The refresh token was already used; its grant is revoked.',
    });
    expect(await lastEvent('oauth/token')).toMatchObject({
      outcome: 'unauthorized',
      summary: { reason: 'refresh_reuse' },
    });
    expect(await verdict('admin', second.access_token)).toMatchObject({ ok: false, reason: 'revoked' });
    // The rotated-to token is dead too: the family is gone.
    expect(((await (await refresh(second.refresh_token)).json()) as { error: string }).error).toBe(
      'invalid_grant',
    );
    expect(await lastEvent('oauth/token')).toMatchObject({ summary: { reason: 'grant_revoked' } });
  });

  it('a grant revoked with `tokens revoke` refuses its refresh token (audited); /oauth/revoke revokes too', async () => {
    const clientId = await register();
    const a = pkce();
    const issued = (await (
      await exchange(clientId, await consent(clientId, a.challenge), a.verifier)
    ).json()) as {
      access_token: string;
      refresh_token: string;
    };
    expect(await revokeToken(db.sql, parseToken(issued.access_token)!.id)).toBe(true);
    const res = await token({
      grant_type: 'refresh_token',
      client_id: clientId,
      refresh_token: issued.refresh_token,
    });
    expect(res.status).toBe(400);
    expect(await lastEvent('oauth/token')).toMatchObject({
      outcome: 'unauthorized',
      summary: { reason: 'grant_revoked' },
    });

    const b = pkce();
    const other = (await (
      await exchange(clientId, await consent(clientId, b.challenge), b.verifier)
    ).json()) as {
      access_token: string;
      refresh_token: string;
    };
    const revoked = await request('/oauth/revoke', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ token: other.refresh_token, client_id: clientId }),
    });
    expect(revoked.status).toBe(200);
    expect(await lastEvent('oauth/revoke')).toMatchObject({ outcome: 'ok', summary: { revoked: true } });
    expect(await verdict('admin', other.access_token)).toMatchObject({ ok: false, reason: 'revoked' });
  });

  it('the console role cannot write the token table itself', async () => {
    await expect(consoleSql`update bulkhead_tokens set revoked_at = null where true`).rejects.toThrow(
      /permission denied/,
    );
  });
});
