import { issueToken, setGroup } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';
import { startTestIdp, type TestIdp } from './oidc-provider.ts';

// Console sign-in by OpenID Connect (issue 46): a real OpenID Provider on loopback, the real console
// and admin server as processes, a real MCP client filing the request, Chromium signing people in.

let db: TestDatabase;
let idp: TestIdp;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let idpOnly: ServerProcess;
let browser: Browser;

const PEOPLE = [
  { login: 'ana', name: 'Ana Berg', email: 'ana@example.com', groups: ['finance', 'staff'] },
  { login: 'bob', name: 'Bob Stone', email: 'bob@example.com', groups: ['sales', 'staff'] },
  { login: 'carla', name: 'Carla Diaz', email: 'carla@example.com', groups: ['support'] },
];

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const [port, idpOnlyPort] = [await freePort(), await freePort()];
  const callback = (p: number) => `http://127.0.0.1:${p}/login/oidc/callback`;
  idp = await startTestIdp([callback(port), callback(idpOnlyPort)], PEOPLE);
  const oidcEnv = (p: number) => ({
    BULKHEAD_PUBLIC_URL: `http://127.0.0.1:${p}`,
    BULKHEAD_OIDC_ISSUER: idp.issuer,
    BULKHEAD_OIDC_CLIENT_ID: idp.clientId,
    BULKHEAD_OIDC_CLIENT_SECRET: idp.clientSecret,
  });
  const consoleUrl = (await db.as('console')).url;
  [admin, consoleServer, idpOnly] = await Promise.all([
    spawnServer('admin', (await db.as('admin')).url),
    spawnServer('console', consoleUrl, oidcEnv(port), port),
    spawnServer(
      'console',
      consoleUrl,
      { ...oidcEnv(idpOnlyPort), BULKHEAD_CONSOLE_TOKEN_SIGN_IN: 'off' },
      idpOnlyPort,
    ),
  ]);
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
  await setGroup(db.sql, {
    group: 'support',
    approve: ['customer'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
  browser = await chromium.launch(chromiumLaunchOptions());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), consoleServer?.stop(), idpOnly?.stop()]);
  await idp?.close();
  await db.drop();
});

/** Goes from the console's sign-in page to the IdP and signs in there as `login` (any password). */
async function throughIdp(context: BrowserContext, base: string, login: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${base}/login`);
  await page.getByRole('link', { name: 'Sign in with your company account' }).click();
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  return page;
}

/** The newest sign-in event by OpenID Connect. */
async function lastOidcSignIn() {
  const [e] = await db.sql<
    { outcome: string; token_label: string | null; result_summary: Record<string, unknown> }[]
  >`
    select outcome, token_label, result_summary from audit_events
    where method = 'console/sign-in' and result_summary->>'via' = 'oidc' order by seq desc limit 1`;
  return e!;
}

/** A real gated call on the real admin server, filed through a real MCP client: its approval id. */
async function fileSendInvoice(): Promise<{ id: string; number: string; status: () => Promise<unknown> }> {
  const [draft] = await db.sql<{ number: string }[]>`
    select i.number from invoices i where i.status = 'draft'
      and not exists (select 1 from bulkhead_approvals a where a.arguments->>'invoice_number' = i.number)
    order by i.number limit 1`;
  const token = await issueTestToken(db.sql, adminServer, {
    label: 'Claude (billing)',
    owner: 'dina@example.com',
  });
  const client = await connectTestClient(admin.url, token, 'oidc-e2e');
  const filed = await client.callTool({ name: 'send_invoice', arguments: { invoice_number: draft!.number } });
  const id = (filed.structuredContent as { approval_id: string }).approval_id;
  const status = async () => {
    const r = await client.callTool({ name: 'get_approval_status', arguments: { approval_id: id } });
    return r.structuredContent;
  };
  return { id, number: draft!.number, status };
}

it('a person in group finance signs in at the IdP in Chromium and approves an admin request, which executes', async () => {
  const request = await fileSendInvoice();
  const context = await browser.newContext();
  const page = await throughIdp(context, consoleServer.url.origin, 'ana');
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  const signIn = await lastOidcSignIn();
  expect(signIn.outcome).toBe('ok');
  expect(signIn.token_label).toBe('Ana Berg');
  expect(signIn.result_summary).toMatchObject({
    via: 'oidc',
    person: {
      iss: idp.issuer,
      sub: 'ana',
      name: 'Ana Berg',
      email: 'ana@example.com',
      groups: ['finance', 'staff'],
    },
    rights: ['approvals:decide'],
  });
  expect(signIn.result_summary.id_token_sha256).toMatch(/^[0-9a-f]{64}$/);

  await page.getByRole('link', { name: `Review and decide ${request.id}` }).click();
  await page.getByLabel('Reason').fill('Checked against the order.');
  await page.getByRole('button', { name: 'Approve and run' }).click();
  await page.getByRole('status').waitFor();
  let status: { status?: string } = {};
  for (let i = 0; i < 100 && status.status !== 'executed'; i++) {
    status = (await request.status()) as typeof status;
    if (status.status !== 'executed') await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toMatchObject({ status: 'executed' });
  const [invoice] = await db.sql`select status from invoices where number = ${request.number}`;
  expect(invoice).toEqual({ status: 'open' });
  const [decided] = await db.sql`
    select a.decided_by, t.person_id is not null as by_person, p.subject, p.email
    from bulkhead_approvals a join bulkhead_tokens t on t.id = a.decided_by_token_id
      join bulkhead_persons p on p.id = t.person_id where a.id = ${request.id}`;
  expect(decided).toEqual({
    decided_by: 'console:Ana Berg',
    by_person: true,
    subject: 'ana',
    email: 'ana@example.com',
  });
  await context.close();
}, 60_000);

it('a person in no mapped group is refused at sign-in, naming what is missing; one whose groups do not approve admin is refused at the decision, and by the database', async () => {
  const bob = await throughIdp(await browser.newContext(), consoleServer.url.origin, 'bob');
  await bob.getByRole('heading', { name: 'Not signed in' }).waitFor();
  expect(await bob.locator('main p').first().innerText()).toBe(
    "Your identity provider signed you in as Bob Stone (bob@example.com), but none of your groups (sales, staff) is mapped to a right in Bulkhead. An operator gives a group rights with `bulkhead groups add <group> --approve <server>` (or on the console's Groups page); then sign in again.",
  );
  expect(await lastOidcSignIn()).toMatchObject({
    outcome: 'forbidden',
    result_summary: {
      reason: 'no_rights',
      person: { sub: 'bob', email: 'bob@example.com', groups: ['sales', 'staff'] },
    },
  });
  expect((await bob.context().cookies()).filter((c) => c.name === 'bh_session')).toEqual([]);

  const request = await fileSendInvoice();
  const context = await browser.newContext();
  const carla = await throughIdp(context, consoleServer.url.origin, 'carla');
  await carla.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  await carla.getByRole('link', { name: `Review and decide ${request.id}` }).click();
  await carla.getByRole('button', { name: 'Approve and run' }).click();
  await carla.getByRole('alert').waitFor();
  expect(await carla.getByRole('alert').innerText()).toBe(
    'You may not decide requests of admin: none of your groups (support) is mapped to approve admin (an operator maps one with `bulkhead groups add <group> --approve admin`).',
  );
  // The console's own login, holding Carla's session, cannot record the decision either.
  const session = (await context.cookies()).find((c) => c.name === 'bh_session')!.value;
  const asConsole = (await db.as('console')).sql;
  await expect(
    asConsole.begin(async (tx) => {
      await tx`select 1 from bulkhead_console_prove(${session})`;
      await tx`update bulkhead_approvals set status = 'approved' where id = ${request.id}`;
    }),
  ).rejects.toThrow(
    'Carla Diaz may not decide requests of admin: none of their groups is mapped to approve admin',
  );
  expect((await db.sql`select status from bulkhead_approvals where id = ${request.id}`)[0]).toEqual({
    status: 'pending',
  });
  const [refusal] = await db.sql`
    select outcome, result_summary->>'reason' as reason from audit_events
    where approval_id = ${request.id} and method = 'approvals/decide'`;
  expect(refusal).toEqual({ outcome: 'forbidden', reason: 'no_right' });
  await context.close();
}, 60_000);

/**
 * Starts a sign-in at the console and signs Ana in at the IdP over plain HTTP (its development login
 * form), holding the IdP's answer back: the callback URL, and how to deliver a callback with the
 * sign-in's cookie, as the browser that started it would. `edit` changes the authorization request.
 */
async function heldCallback(
  base: string,
  edit?: (auth: URL) => void,
): Promise<{ callback: URL; deliver: (url: URL) => Promise<Response> }> {
  const start = await fetch(`${base}/login/oidc`, { redirect: 'manual' });
  const binding = start.headers
    .getSetCookie()
    .find((c) => c.startsWith('bh_oidc='))!
    .split(';')[0]!;
  const auth = new URL(start.headers.get('location')!);
  edit?.(auth);
  const jar = new Map<string, string>();
  const step = async (url: string, init: RequestInit = {}) => {
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await fetch(url, { ...init, redirect: 'manual', headers: { ...init.headers, cookie } });
    for (const c of r.headers.getSetCookie()) {
      const [pair] = c.split(';');
      jar.set(pair!.slice(0, pair!.indexOf('=')), pair!.slice(pair!.indexOf('=') + 1));
    }
    return r;
  };
  let location = auth.href;
  for (let hops = 0; !location.startsWith(`${base}/login/oidc/callback?`); hops++) {
    if (hops > 6) throw new Error(`the IdP did not answer with the callback: ${location}`);
    let r = await step(location);
    if (r.status === 200) {
      const action = /action="([^"]+)"/.exec(await r.text())![1]!;
      r = await step(new URL(action, idp.issuer).href, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt: 'login', login: 'ana', password: 'any password' }).toString(),
      });
    }
    location = new URL(r.headers.get('location')!, idp.issuer).href;
  }
  return {
    callback: new URL(location),
    deliver: (url) => fetch(url, { headers: { cookie: binding }, redirect: 'manual' }),
  };
}

it('an iss mix-up, a wrong nonce and a replayed code are refused, each audited', async () => {
  const base = consoleServer.url.origin;
  const mixUp = await heldCallback(base);
  mixUp.callback.searchParams.set('iss', 'https://idp.attacker.example');
  expect((await mixUp.deliver(mixUp.callback)).status).toBe(401);
  expect(await lastOidcSignIn()).toMatchObject({
    outcome: 'unauthorized',
    result_summary: { reason: 'issuer_mismatch' },
  });

  const nonce = await heldCallback(base, (auth) => auth.searchParams.set('nonce', 'n'.repeat(43)));
  expect((await nonce.deliver(nonce.callback)).status).toBe(401);
  expect(await lastOidcSignIn()).toMatchObject({
    outcome: 'unauthorized',
    result_summary: { reason: 'nonce_mismatch' },
  });

  // A code used once: its callback again is refused (the sign-in is spent), and so is the code under a
  // sign-in freshly started (the IdP refuses a code redeemed before).
  const used = await heldCallback(base);
  const first = await used.deliver(used.callback);
  expect(first.status).toBe(200);
  expect(first.headers.getSetCookie().some((c) => c.startsWith('bh_session='))).toBe(true);
  expect((await used.deliver(used.callback)).status).toBe(400);
  expect(await lastOidcSignIn()).toMatchObject({
    outcome: 'bad_request',
    result_summary: { reason: 'state_not_valid' },
  });
  const again = await heldCallback(base);
  const replay = new URL(again.callback);
  replay.searchParams.set('code', used.callback.searchParams.get('code')!);
  expect((await again.deliver(replay)).status).toBe(401);
  expect(await lastOidcSignIn()).toMatchObject({
    outcome: 'unauthorized',
    result_summary: { reason: 'code_rejected' },
  });
}, 90_000);

it('with token sign-in off only the IdP opens the console: no token form, a token refused, a person signed in', async () => {
  const base = idpOnly.url.origin;
  const { token } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Break glass',
    scopes: ['approvals:decide'],
    expiresAt: null,
    createdBy: 'test',
    owner: 'ops@example.com',
  });
  const login = await fetch(`${base}/login`);
  const html = await login.text();
  expect(html).toContain('Sign in with your company account');
  expect(html).not.toContain('Approver token');
  const bearer = await fetch(`${base}/`, { headers: { authorization: `Bearer ${token}` } });
  expect(bearer.status).toBe(401);
  // No form to take a nonce from: the post is refused as a token sign-in, before any form is checked.
  const form = await fetch(`${base}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({ token }),
  });
  expect(form.status).toBe(403);
  const [refused] = await db.sql`
    select outcome, result_summary->>'reason' as reason from audit_events
    where method = 'console/sign-in' order by seq desc limit 1`;
  expect(refused).toEqual({ outcome: 'forbidden', reason: 'token_sign_in_off' });
  // The same token still opens the console that allows it (break-glass stays where it is on).
  expect(
    (await fetch(`${consoleServer.url.origin}/`, { headers: { authorization: `Bearer ${token}` } })).status,
  ).toBe(200);

  const page = await throughIdp(await browser.newContext(), base, 'ana');
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
}, 60_000);
