import { serve, type ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createLogger, createServer, defineTool, getApproval, issueToken, revokeToken } from '@bulkhead/core';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db';
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
let http: ServerType;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  mcp = await startTestServer(gated, { sql: db.sql, logger });
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
  consoleApp = createConsoleApp({ sql: db.sql, logger, publicUrl: 'http://127.0.0.1' });
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
    const https = createConsoleApp({ sql: db.sql, logger, publicUrl: 'https://approve.example.test' });
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
});

describe('deciding', () => {
  it('lists pending requests with preview, arguments, requester and age', async () => {
    const id = await request('Spring sale starts Monday');
    const { cookie } = await signIn();
    const page = await (await fetch(`${base}/`, { headers: { cookie } })).text();
    expect(page).toContain(
      `<a href="/approvals/${id}">Publish the notice &quot;Spring sale starts Monday&quot;.</a>`,
    );
    expect(page).toContain('<dd>Claude (marketing)</dd>');
    expect(page).toContain('&quot;text&quot;: &quot;Spring sale starts Monday&quot;');
    expect(page).toMatch(/<time datetime="[^"]+">just now<\/time>/);
    expect(page).toContain('Signed in as Ana Berg');
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
    expect(event).toEqual({
      server: 'console-gate',
      token_id: approverId,
      token_label: 'console:Ana Berg',
      outcome: 'rejected',
    });
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
