import { serve, type ServerType } from '@hono/node-server';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool } from '@bulkhead/core';
import { getApproval, issueToken, parseToken, revokeToken } from '@bulkhead/core/operator';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { type Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConsoleApp, type ConsoleApp } from './app.tsx';

const gated = createServer({
  name: 'console-gate',
  version: '1.0.0',
  description: 'A gated server built in the console test.',
  tools: [
    defineTool({
      name: 'publish_notice',
      title: 'Publish notice',
      description: 'Publishes a notice.',
      scope: 'notices:write',
      input: z.object({ text: z.string().max(200) }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      },
      approval: { preview: ({ text }) => `Publish the notice "${text}".` },
      handler: async ({ text }) => ({ published: text }),
    }),
  ],
});

const logger = createLogger({ level: 'silent' });
let db: TestDatabase;
let mcp: TestServer;
let mcpToken: string;
let approverToken: string;
let approverId: string;
let consoleApp: ConsoleApp;
let consoleSql: Sql;
let http: ServerType;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  mcp = await startTestServer(gated, { db, logger });
  mcpToken = await issueTestToken(db.sql, gated, { label: 'Claude (marketing)' });
  const issued = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Ana Berg',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
  });
  approverToken = issued.token;
  approverId = issued.record.id;
  // Every test here signs in from 127.0.0.1, refused ones included: the throttle gets its own test below.
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: 'http://127.0.0.1',
    signInPolicy: { failures: 1000, windowSeconds: 60 },
  });
  http = serve({ fetch: consoleApp.app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => http.once('listening', resolve));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => http.close(resolve));
  await consoleApp.close();
  await mcp.close();
  await db.drop();
});

async function request(text: string): Promise<string> {
  const client = new Client(
    { name: 't', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(mcp.url, {
      requestInit: { headers: { Authorization: `Bearer ${mcpToken}` } },
    }),
  );
  const result = await client.callTool({ name: 'publish_notice', arguments: { text } });
  await client.close();
  return (result.structuredContent as { approval_id: string }).approval_id;
}

function cookies(res: Response): Record<string, string> {
  return Object.fromEntries(
    res.headers.getSetCookie().map((c) => c.split(';')[0]!.split('=') as [string, string]),
  );
}

/** Signs in through the form, as a browser would; returns the session cookie and the page's CSRF token. */
async function signIn(token = approverToken): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${base}/login`);
  const login = cookies(form).bh_login!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const res = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: `bh_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, token }),
  });
  expect(res.status).toBe(303);
  const cookie = `bh_session=${cookies(res).bh_session}`;
  const home = await (await fetch(`${base}/`, { headers: { cookie } })).text();
  return { cookie, csrf: /name="_csrf" value="([^"]+)"/.exec(home)![1]! };
}

function post(
  path: string,
  cookie: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return fetch(`${base}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
}

interface SignInEvent {
  server: string;
  method: string;
  outcome: string;
  token_id: string | null;
  token_label: string | null;
  arguments: unknown;
  result_summary: unknown;
}

/** The console's sign-in audit events, in log order. */
function signInEvents() {
  return db.sql<SignInEvent[]>`
    select server, method, outcome, token_id, token_label, arguments, result_summary from audit_events
    where server = 'console' and method = 'console/sign-in' order by seq`;
}

describe('signing in', () => {
  it('sends a visitor without a session to the sign-in form', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const res = await fetch(`${base}/`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/login');
    const form = await fetch(`${base}/login`);
    expect(form.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect(form.headers.getSetCookie()[0]).toMatch(
      /^bh_login=[\w-]{43}; Max-Age=3600; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    const page = await form.text();
    expect(page).toMatch(/^<!doctype html><html lang="en">/);
    expect(page).toContain('<label for="token">Approver token</label>');
    expect(page).not.toContain('<script');
  });

  it('refuses an MCP token with 401, in the form and as a bearer token', async () => {
    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await fetch(`${base}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `bh_login=${login}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, token: mcpToken }),
    });
    expect(res.status).toBe(401);
    expect(cookies(res).bh_session).toBeUndefined();
    expect(await res.text()).toContain(
      'This token does not open the console: it is unknown, expired, revoked, or not an approver token.',
    );
    const bearer = await fetch(`${base}/`, { headers: { Authorization: `Bearer ${mcpToken}` } });
    expect(bearer.status).toBe(401);
    expect(bearer.headers.get('www-authenticate')).toBe('Bearer realm="console", error="invalid_token"');
    const approver = await fetch(`${base}/`, { headers: { Authorization: `Bearer ${approverToken}` } });
    expect(approver.status).toBe(200);
  });

  it('refuses a sign-in form without its CSRF cookie', async () => {
    const res = await fetch(`${base}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: 'x'.repeat(43), token: approverToken }),
    });
    expect(res.status).toBe(400);
  });

  it('sets an HttpOnly, SameSite=Strict session cookie, Secure behind https', async () => {
    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await post('/login', `bh_login=${login}`, { _csrf: csrf, token: approverToken });
    expect(res.headers.getSetCookie().find((c) => c.startsWith('bh_session='))).toMatch(
      /^bh_session=[\w-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Strict$/,
    );
    const https = createConsoleApp({
      sql: (await db.as('console')).sql,
      logger,
      publicUrl: 'https://approve.example.test',
    });
    const secure = await https.app.request('https://approve.example.test/login', {
      headers: { host: 'approve.example.test' },
    });
    expect(secure.headers.getSetCookie()[0]).toMatch(
      /^__Host-bh_login=[\w-]{43}; Max-Age=3600; Path=\/; HttpOnly; Secure; SameSite=Strict$/,
    );
    const rebound = await https.app.request('https://evil.example.test/login', {
      headers: { host: 'evil.example.test' },
    });
    expect(rebound.status).toBe(403);
    await https.close();
  });

  it('audits every refused sign-in with its reason and source, never the token, and a sign-in that worked', async () => {
    const before = await signInEvents();
    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    expect((await post('/login', `bh_login=${login}`, { _csrf: csrf, token: mcpToken })).status).toBe(401);
    expect((await post('/login', `bh_login=${login}`, { _csrf: csrf, token: approverToken })).status).toBe(
      400,
    );
    expect((await fetch(`${base}/`, { headers: { Authorization: 'Bearer bh_nope' } })).status).toBe(401);
    await signIn();
    const events = (await signInEvents()).slice(before.length);
    expect(events).toEqual([
      {
        server: 'console',
        method: 'console/sign-in',
        outcome: 'unauthorized',
        token_id: parseToken(mcpToken)!.id,
        token_label: null,
        arguments: { source: '127.0.0.1' },
        result_summary: { reason: 'wrong_server' },
      },
      {
        server: 'console',
        method: 'console/sign-in',
        outcome: 'bad_request',
        token_id: null,
        token_label: null,
        arguments: { source: '127.0.0.1' },
        result_summary: { reason: 'form_not_valid' },
      },
      {
        server: 'console',
        method: 'console/sign-in',
        outcome: 'unauthorized',
        token_id: null,
        token_label: null,
        arguments: { source: '127.0.0.1' },
        result_summary: { reason: 'malformed', via: 'bearer' },
      },
      {
        server: 'console',
        method: 'console/sign-in',
        outcome: 'ok',
        token_id: approverId,
        token_label: 'Ana Berg',
        arguments: { source: '127.0.0.1' },
        result_summary: { session_hours: 12 },
      },
    ]);
    for (const token of [mcpToken, approverToken])
      expect(
        (
          await db.sql`select count(*)::int as n from audit_events where strpos(audit_events::text, ${parseToken(token)!.secret}) > 0`
        )[0]!.n,
      ).toBe(0);
  });

  it('refuses a form token the console did not mint (as a planted cookie would carry), and a form used twice', async () => {
    const planted = 'p'.repeat(43);
    const res = await post('/login', `bh_login=${planted}`, { _csrf: planted, token: approverToken });
    expect(res.status).toBe(400);
    expect(cookies(res).bh_session).toBeUndefined();
    expect(await res.text()).toContain('The sign-in form had expired. Please enter your token again.');

    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    expect((await post('/login', `bh_login=${login}`, { _csrf: csrf, token: approverToken })).status).toBe(
      303,
    );
    expect((await post('/login', `bh_login=${login}`, { _csrf: csrf, token: approverToken })).status).toBe(
      400,
    );
    // A minted nonce with another browser's cookie is refused too.
    const other = await fetch(`${base}/login`);
    const otherCsrf = /name="_csrf" value="([^"]+)"/.exec(await other.text())![1]!;
    expect(
      (await post('/login', `bh_login=${login}`, { _csrf: otherCsrf, token: approverToken })).status,
    ).toBe(400);
  });

  it('signs in with its own form even when a planted sign-in cookie shadows its own', async () => {
    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    // A cookie with a longer path comes first: `bh_login=planted; bh_login=<ours>`.
    const res = await post('/login', `bh_login=${'p'.repeat(43)}; bh_login=${login}`, {
      _csrf: csrf,
      token: approverToken,
    });
    expect(res.status).toBe(303);
    expect(cookies(res).bh_session).toMatch(/^[\w-]{43}$/);
  });

  it('refuses and audits a sign-in posted from another origin or another site on this host', async () => {
    const before = await signInEvents();
    const form = await fetch(`${base}/login`);
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const fields = { _csrf: csrf, token: approverToken };
    const elsewhere = await post('/login', `bh_login=${login}`, fields, { origin: 'http://127.0.0.1:1' });
    expect([elsewhere.status, await elsewhere.text()]).toEqual([403, 'Cross-origin form refused.']);
    const sameSite = await post('/login', `bh_login=${login}`, fields, { 'sec-fetch-site': 'same-site' });
    expect([sameSite.status, await sameSite.text()]).toEqual([403, 'Cross-origin form refused.']);
    const events = (await signInEvents()).slice(before.length);
    expect(events.map((e) => [e.outcome, e.result_summary])).toEqual([
      ['forbidden', { reason: 'cross_origin' }],
      ['forbidden', { reason: 'cross_site' }],
    ]);
  });
});

describe('deciding', () => {
  it('lists pending requests with preview, arguments, requester and age', async () => {
    const id = await request('Spring sale starts Monday');
    const { cookie } = await signIn();
    const page = await (await fetch(`${base}/`, { headers: { cookie } })).text();
    expect(page).toContain(
      `<a href="/approvals/${id}"><bdi>Publish the notice &quot;Spring sale starts Monday&quot;.</bdi></a>`,
    );
    expect(page).toContain('<dd><bdi>Claude (marketing)</bdi></dd>');
    expect(page).toContain(
      '<th scope="row"><code><bdi>text</bdi></code></th><td><div class="text"><bdi>Spring sale starts Monday</bdi></div></td>',
    );
    expect(page).toMatch(/<time datetime="[^"]+">just now<\/time>/);
    expect(page).toContain('<span>Signed in as <bdi>Ana Berg</bdi></span>');
  });

  it('shows the trace id of the call that filed a request, when that call was traced', async () => {
    const id = await request('Traced notice');
    const { cookie } = await signIn();
    const page = async () => (await fetch(`${base}/approvals/${id}`, { headers: { cookie } })).text();
    expect(await page()).not.toContain('<dt>Trace</dt>');
    const traceId = 'ab'.repeat(16);
    // The test server exports no spans: the filing call's traceparent is set as a traced call would have stored it.
    await db.sql.begin(async (tx) => {
      await tx`alter table bulkhead_approvals disable trigger user`;
      await tx`update bulkhead_approvals set filed_in_trace = ${`00-${traceId}-${'cd'.repeat(8)}-01`} where id = ${id}`;
      await tx`alter table bulkhead_approvals enable trigger user`;
    });
    expect(await page()).toContain(
      `<dt>Trace</dt><dd><code>${traceId}</code> (the call that filed it; its execution links to it)</dd>`,
    );
  });

  it('shows the values its effect will use, field by field, beside the arguments', async () => {
    const id = await request('Values shown');
    const { cookie } = await signIn();
    const page = async () => (await fetch(`${base}/approvals/${id}`, { headers: { cookie } })).text();
    expect(await page()).not.toContain('What its effect will use');
    // As a tool with approval values files them (this test's tool has none).
    await db.sql`update bulkhead_approvals set approved_values = ${db.sql.json({ recipient: 'team@example.test' })}
      where id = ${id}`;
    const shown = await page();
    expect(shown).toContain('<h2 id="values">What its effect will use</h2>');
    const card = shown.slice(shown.indexOf('<h2 id="values">'));
    expect(card.slice(0, card.indexOf('</section>'))).toMatch(
      /<th scope="row"><code><bdi>recipient<\/bdi><\/code><\/th><td><div class="text"><bdi>team@example\.test<\/bdi><\/div>/,
    );
  });

  it('says a request was decided only when its state says so, whatever the address claims', async () => {
    const id = await request('Decided? Not yet');
    const { cookie } = await signIn();
    const page = await (await fetch(`${base}/approvals/${id}?decided=1`, { headers: { cookie } })).text();
    expect(page).not.toContain('role="status"');
    expect(page).not.toContain('Approved.');
    expect(page).toContain('name="decision"');
  });

  it('checks CSRF and origin on every form, requires a reason to reject, and refuses a second decision', async () => {
    const id = await request('Office closed Friday');
    const { cookie, csrf } = await signIn();
    const path = `/approvals/${id}/decide`;
    const hash = (await getApproval(db.sql, id))!.argumentsHash;

    expect((await post(path, cookie, { decision: 'approve', hash })).status).toBe(403);
    expect(
      (await post(path, cookie, { _csrf: 'forged'.padEnd(43, 'x'), decision: 'approve', hash })).status,
    ).toBe(403);
    const crossSite = await post(
      path,
      cookie,
      { _csrf: csrf, decision: 'approve', hash },
      { origin: 'https://evil.example' },
    );
    expect(crossSite.status).toBe(403);
    expect((await getApproval(db.sql, id))!.status).toBe('pending');

    const noReason = await post(path, cookie, { _csrf: csrf, decision: 'reject', reason: ' ', hash });
    expect(noReason.status).toBe(400);
    expect(await noReason.text()).toContain(
      'A reason is required to reject: say why, the requester will see it.',
    );

    const stale = await post(path, cookie, { _csrf: csrf, decision: 'approve', hash: '0'.repeat(64) });
    expect(stale.status).toBe(409);
    expect(await stale.text()).toContain(
      `Approval ${id} no longer has the arguments you were shown; review it again.`,
    );

    const rejected = await post(path, cookie, {
      _csrf: csrf,
      decision: 'reject',
      reason: 'we are open',
      hash,
    });
    expect(rejected.status).toBe(303);
    expect(rejected.headers.get('location')).toBe(`/approvals/${id}?decided=1`);
    expect(await getApproval(db.sql, id)).toMatchObject({
      status: 'rejected',
      decidedBy: 'console:Ana Berg',
      decidedByTokenId: approverId,
      decisionReason: 'we are open',
    });
    const shown = await (await fetch(`${base}/approvals/${id}?decided=1`, { headers: { cookie } })).text();
    expect(shown).toContain('Rejected. It will never run.');
    expect(shown).not.toContain('name="decision"');

    const again = await post(path, cookie, { _csrf: csrf, decision: 'approve', hash });
    expect(again.status).toBe(409);
    expect(await again.text()).toMatch(
      /Approval ap_\w+ was already decided \(rejected by console:Ana Berg on .* UTC\)\./,
    );

    const [event] = await db.sql`
      select server, token_id, token_label, outcome from audit_events where approval_id = ${id} and method = 'approvals/decide'`;
    // Decisions are written by the console's role alone, so they stand under its name.
    expect(event).toEqual({
      server: 'console',
      token_id: approverId,
      token_label: 'console:Ana Berg',
      outcome: 'rejected',
    });
    // The decision is an event of the console request that took it: it carries that request's id.
    const [decided] = await db.sql`
      select request_id from audit_events where approval_id = ${id} and method = 'approvals/decide'`;
    expect(decided!.request_id).toBe(rejected.headers.get('x-request-id'));
  });

  it('refuses to approve a request whose stored arguments changed since it was made', async () => {
    const id = await request('Prices unchanged');
    const { cookie, csrf } = await signIn();
    const hash = (await getApproval(db.sql, id))!.argumentsHash;
    // Arguments changed in storage, the stored hash left alone: what the page shows is not what was requested.
    await db.sql`update bulkhead_approvals set arguments = '{"text":"Prices doubled"}' where id = ${id}`;
    const res = await post(`/approvals/${id}/decide`, cookie, { _csrf: csrf, decision: 'approve', hash });
    expect(res.status).toBe(409);
    expect(await res.text()).toContain(
      `Approval ${id}: the stored arguments changed since the request — refused; reject it and ask for a new request.`,
    );
    expect((await getApproval(db.sql, id))!.status).toBe('pending');
  });

  it('filters the history by status, server and tool', async () => {
    const { cookie } = await signIn();
    const all = await (await fetch(`${base}/history`, { headers: { cookie } })).text();
    expect(all).toContain('Office closed Friday');
    expect(all).toContain('Spring sale starts Monday');
    const rejected = await (
      await fetch(`${base}/history?status=rejected&server=console-gate&tool=publish_notice`, {
        headers: { cookie },
      })
    ).text();
    expect(rejected).toContain('Office closed Friday');
    expect(rejected).not.toContain('Spring sale starts Monday');
    expect(rejected).toContain('<option value="rejected" selected="">rejected</option>');
    const none = await (await fetch(`${base}/history?server=elsewhere`, { headers: { cookie } })).text();
    expect(none).toContain('No requests match.');
  });

  it('ends the sessions of a revoked approver token, and signs out', async () => {
    const { cookie, csrf } = await signIn();
    const out = await post('/logout', cookie, { _csrf: csrf });
    expect(out.status).toBe(303);
    expect((await fetch(`${base}/`, { headers: { cookie }, redirect: 'manual' })).status).toBe(303);

    const other = await issueToken(db.sql, {
      kind: 'approver',
      server: 'console',
      label: 'Bo',
      scopes: ['approvals:decide'],
      expiresAt: null,
      createdBy: 'test',
    });
    const session = await signIn(other.token);
    expect(
      (await fetch(`${base}/`, { headers: { cookie: session.cookie }, redirect: 'manual' })).status,
    ).toBe(200);
    await revokeToken(db.sql, other.record.id);
    const after = await fetch(`${base}/`, { headers: { cookie: session.cookie }, redirect: 'manual' });
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('/login');
  });
});

describe('sign-in throttle', () => {
  it('turns a source away after 10 refused sign-ins in a minute, on every replica, with 429 and Retry-After', async () => {
    // Two replicas behind one proxy (X-Forwarded-For, one hop), sharing the database.
    const replicas = [0, 1].map(() =>
      createConsoleApp({ sql: consoleSql, logger, publicUrl: 'http://127.0.0.1', proxyHops: 1 }),
    );
    const servers = await Promise.all(
      replicas.map(async (r) => {
        const server = serve({ fetch: r.app.fetch, port: 0, hostname: '127.0.0.1' });
        await new Promise<void>((resolve) => server.once('listening', resolve));
        return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
      }),
    );
    // What a client writes left of the proxy's entry is ignored: the source is 203.0.113.50.
    const from = (ip: string) => ({ 'x-forwarded-for': `10.9.9.9, ${ip}` });
    const attempt = (i: number, ip = '203.0.113.50') =>
      fetch(`${servers[i % 2]!.url}/`, { headers: { ...from(ip), Authorization: `Bearer ${mcpToken}` } });
    const before = await signInEvents();

    for (let i = 0; i < 10; i++) expect((await attempt(i)).status).toBe(401);
    // The first refusal made 30 s ago: the source may come back in 30 s.
    await db.sql`
      update bulkhead_console_sign_in_failures set failures[1] = now() - interval '30 seconds'
      where source = '203.0.113.50'`;
    const refused = await attempt(10);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(await refused.text()).toContain(
      'More than 10 sign-ins from your address failed within 60 seconds. Try again in 30 seconds.',
    );
    // The form is turned away too, even with the right token, before the token is looked at.
    const form = await fetch(`${servers[0]!.url}/login`, { headers: from('203.0.113.50') });
    const login = cookies(form).bh_login!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const blocked = await fetch(`${servers[1]!.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        ...from('203.0.113.50'),
        cookie: `bh_login=${login}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: csrf, token: approverToken }),
    });
    expect(blocked.status).toBe(429);
    // Another address is not affected.
    expect((await attempt(0, '203.0.113.51')).status).toBe(401);

    const events = (await signInEvents()).slice(before.length);
    expect(events.map((e) => [e.outcome, (e.arguments as { source: string }).source])).toEqual([
      ...Array(10).fill(['unauthorized', '203.0.113.50']),
      ['rate_limited', '203.0.113.50'],
      ['unauthorized', '203.0.113.51'],
    ]);
    expect(events[10]!.result_summary).toMatchObject({
      reason: 'too_many_failures',
      via: 'bearer',
      limit: '10 per 60 s',
    });

    for (const { server } of servers) await new Promise((resolve) => server.close(resolve));
    for (const r of replicas) await r.close();
  });
});

describe('hostile posts (issue 31)', () => {
  it('a decision without the hash of the arguments shown is refused; nothing is decided', async () => {
    const id = await request('Hash me');
    const { cookie, csrf } = await signIn();
    const res = await post(`/approvals/${id}/decide`, cookie, { _csrf: csrf, decision: 'approve' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain(
      'The form did not say which arguments you were shown. Reload the page, review it and decide again.',
    );
    expect((await getApproval(db.sql, id))!.status).toBe('pending');
  });

  it('cross-origin posts to the consent form, a decision and sign-out are refused and audited', async () => {
    const id = await request('Cross me');
    const { cookie, csrf } = await signIn();
    const [{ seq } = { seq: '0' }] = await db.sql<
      { seq: string }[]
    >`select coalesce(max(seq), 0) as seq from audit_events`;
    const evil = { origin: 'https://evil.example' };
    for (const path of ['/oauth/authorize', `/approvals/${id}/decide`, '/logout']) {
      const res = await post(path, cookie, { _csrf: csrf, decision: 'approve' }, evil);
      expect([res.status, await res.text()]).toEqual([403, 'Cross-origin form refused.']);
    }
    const sameSite = await post('/logout', cookie, { _csrf: csrf }, { 'sec-fetch-site': 'same-site' });
    expect(sameSite.status).toBe(403);
    const events = await db.sql<{ method: string; outcome: string; args: unknown; summary: unknown }[]>`
      select method, outcome, arguments as args, result_summary as summary from audit_events
      where seq > ${seq} and server = 'console' and outcome = 'forbidden' and result_summary->>'path' is not null
      order by seq`;
    expect(events).toEqual([
      {
        method: 'oauth/authorize',
        outcome: 'forbidden',
        args: { source: '127.0.0.1' },
        summary: {
          reason: 'cross_origin',
          path: '/oauth/authorize',
          origin: 'https://evil.example',
          sec_fetch_site: null,
        },
      },
      {
        method: 'approvals/decide',
        outcome: 'forbidden',
        args: { source: '127.0.0.1', approval_id: id },
        summary: {
          reason: 'cross_origin',
          path: `/approvals/${id}/decide`,
          origin: 'https://evil.example',
          sec_fetch_site: null,
        },
      },
      {
        method: 'console/logout',
        outcome: 'forbidden',
        args: { source: '127.0.0.1' },
        summary: {
          reason: 'cross_origin',
          path: '/logout',
          origin: 'https://evil.example',
          sec_fetch_site: null,
        },
      },
      {
        method: 'console/logout',
        outcome: 'forbidden',
        args: { source: '127.0.0.1' },
        summary: { reason: 'cross_site', path: '/logout', origin: null, sec_fetch_site: 'same-site' },
      },
    ]);
    expect((await getApproval(db.sql, id))!.status).toBe('pending');
  });

  it('a client that closes mid-body gets no stack trace logged and no 500', async () => {
    const lines: { level: number; msg: string; err?: unknown }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const own = createConsoleApp({
      sql: consoleSql,
      logger: pino({ level: 'info' }, sink),
      publicUrl: 'http://127.0.0.1',
      signInPolicy: { failures: 1000, windowSeconds: 60 },
    });
    const server = serve({ fetch: own.app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const { cookie } = await signIn();
    const id = await request('Abandon me');
    const statuses: string[] = [];
    for (const path of [`/approvals/${id}/decide`, '/oauth/authorize', '/login']) {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.on('data', (d: Buffer) => statuses.push(d.toString().split('\r\n')[0]!));
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
          `Content-Length: 1000\r\n\r\n_csrf=abc&decision=`,
      );
      await sleep(50);
      socket.destroy();
    }
    await expect
      .poll(() => lines.filter((l) => l.msg === 'client closed the connection mid-body').length)
      .toBe(3);
    await new Promise((resolve) => server.close(resolve));
    await own.close();
    expect(lines.filter((l) => l.level >= 50 || l.err !== undefined)).toEqual([]);
    expect(statuses.filter((s) => s.includes(' 500 '))).toEqual([]);
  });
});
