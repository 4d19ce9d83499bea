import { randomUUID } from 'node:crypto';
import { createAuditWriter } from '@bulkhead/audit';
import { setGroup } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, connectTestClient } from '@bulkhead/core/testing';
import type { Sql } from '@bulkhead/db';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, listStatus, spawnServer, type ServerProcess } from './helpers.ts';
import { startTestIdp, type TestIdp, type TestPerson } from './oidc-provider.ts';

// "My tokens" (issue 46, item 3), end to end: a person signs in at a real OpenID Provider in Chromium,
// issues their own token for the real admin server within their groups' rights, and a real MCP client
// uses it; what that token files, the same person cannot approve — not in the console, not in the
// database, not after their e-mail changed at the IdP — and another person with the approve right can;
// revoked in the page, the server refuses the token.

let db: TestDatabase;
let idp: TestIdp;
let admin: ServerProcess;
let consoleServer: ServerProcess;
let browser: Browser;

const PEOPLE: TestPerson[] = [
  { login: 'ana', name: 'Ana Berg', email: 'ana@example.com', groups: ['billing', 'finance'] },
  { login: 'bob', name: 'Bob Stone', email: 'bob@example.com', groups: ['finance'] },
  { login: 'carla', name: 'Carla Diaz', email: 'carla@example.com', groups: ['support'] },
];

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const [port, adminPort] = [await freePort(), await freePort()];
  idp = await startTestIdp([`http://127.0.0.1:${port}/login/oidc/callback`], PEOPLE);
  [admin, consoleServer] = await Promise.all([
    spawnServer('admin', (await db.as('admin')).url, {}, adminPort),
    spawnServer(
      'console',
      (await db.as('console')).url,
      {
        BULKHEAD_PUBLIC_URL: `http://127.0.0.1:${port}`,
        BULKHEAD_OIDC_ISSUER: idp.issuer,
        BULKHEAD_OIDC_CLIENT_ID: idp.clientId,
        BULKHEAD_OIDC_CLIENT_SECRET: idp.clientSecret,
        BULKHEAD_SERVER_URLS: `admin=http://127.0.0.1:${adminPort}`,
      },
      port,
    ),
  ]);
  const group = (name: string, rights: { approve?: string[]; tokens?: string[] }) =>
    setGroup(db.sql, { group: name, approve: [], operate: false, tokens: [], operator: 'test', ...rights });
  await group('billing', { tokens: ['admin:invoices:read', 'admin:invoices:write'] });
  await group('finance', { approve: ['admin'] });
  await group('support', { approve: ['customer'] });
  browser = await chromium.launch(chromiumLaunchOptions());
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await Promise.all([admin?.stop(), consoleServer?.stop()]);
  await idp?.close();
  await db.drop();
});

/** Signs `login` in at the IdP from the console's sign-in page, in a browser context of its own. */
async function signIn(login: string): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  await page.goto(`${consoleServer.url.origin}/login`);
  await page.getByRole('link', { name: 'Sign in with your company account' }).click();
  await page.locator('input[name=login]').fill(login);
  await page.locator('input[name=password]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('heading', { name: 'Waiting for approval' }).waitFor();
  return { page, context };
}

/** Tries to approve `id` from the pending list; answers what the console says. */
async function tryToApprove(page: Page, id: string): Promise<string> {
  await page.goto(`${consoleServer.url.origin}/`);
  await page.getByRole('link', { name: `Review and decide ${id}` }).click();
  await page.getByLabel('Reason').fill('Looks right.');
  await page.getByRole('button', { name: 'Approve and run' }).click();
  const answer = page.getByRole('alert').or(page.getByRole('status'));
  await answer.first().waitFor();
  return answer.first().innerText();
}

/**
 * The console's own login, holding `session` (a person's cookie), recording an approval of `id` itself
 * as the console writes one (its event first): what the database says.
 */
async function approveInDatabase(session: string, id: string): Promise<string> {
  const asConsole: Sql = (await db.as('console')).sql;
  return asConsole
    .begin(async (tx) => {
      const [me] = await tx<{ token_id: string; label: string }[]>`
        select token_id, label from bulkhead_console_prove(${session})`;
      const event = randomUUID();
      await createAuditWriter(tx as unknown as Sql).appendIn(tx, {
        id: event,
        server: 'console',
        method: 'approvals/decide',
        outcome: 'approved',
        approvalId: id,
        tokenId: me!.token_id,
        requestId: 'r',
        durationMs: 0,
      });
      await tx`update bulkhead_approvals set status = 'approved', decided_by = ${`console:${me!.label}`},
        decided_by_token_id = ${me!.token_id}, decided_arguments_hash = arguments_hash, decision_event_id = ${event}
        where id = ${id}`;
      return 'approved';
    })
    .catch((err: Error) => err.message);
}

const sessionOf = async (context: BrowserContext) =>
  (await context.cookies()).find((c) => c.name === 'bh_session')!.value;

it('a person issues their own token in Chromium, within their rights; what it files they cannot approve (nor after an e-mail change), another person can; revoked, the server refuses it', async () => {
  const ana = await signIn('ana');
  await ana.page.getByRole('link', { name: 'My tokens' }).click();
  await ana.page.getByRole('heading', { name: 'My tokens' }).waitFor();
  expect(await ana.page.getByText('You hold no live tokens.').count()).toBe(1);
  // Offered: admin, with the two scopes the group billing holds, nothing else.
  const form = ana.page.getByRole('form', { name: 'Issue a token for admin' });
  expect(
    await form
      .locator('input[name=scopes]')
      .evaluateAll((xs) => xs.map((x) => (x as HTMLInputElement).value)),
  ).toEqual(['invoices:read', 'invoices:write']);
  await form.getByLabel('Label').fill('Claude Code on my laptop');
  await form.getByLabel('Expires after').selectOption('30d');
  await form.getByRole('button', { name: 'Issue a token for admin' }).click();
  await ana.page.getByRole('heading', { name: 'Token issued' }).waitFor();
  const token = await ana.page.locator('#token').innerText();
  expect(token).toMatch(/^bh_admin_[a-z2-9]{12}_[A-Za-z0-9_-]{43}$/);
  expect(
    await ana.page.getByRole('region', { name: 'Claude Code configuration' }).locator('pre').innerText(),
  ).toBe(
    `claude mcp add --transport http admin ${admin.url.origin}/mcp --header "Authorization: Bearer ${token}"`,
  );
  const tokenId = token.split('_')[2]!;
  expect(
    (
      await db.sql`select p.subject from bulkhead_tokens t join bulkhead_persons p on p.id = t.person_id
    where t.id = ${tokenId}`
    )[0],
  ).toEqual({ subject: 'ana' });

  // The token answers a real MCP call on the admin server, and files a gated one.
  const client = await connectTestClient(new URL('/mcp', admin.url), token, 'my-tokens-e2e');
  const listed = await client.callTool({ name: 'list_invoices', arguments: {} });
  expect(listed.isError ?? false).toBe(false);
  const [draft] = await db.sql<{ number: string }[]>`
    select number from invoices where status = 'draft' order by number limit 1`;
  const filed = await client.callTool({ name: 'send_invoice', arguments: { invoice_number: draft!.number } });
  const approval = (filed.structuredContent as { approval_id: string }).approval_id;
  await client.close();

  // Ana, who may approve admin requests, may not approve her own: the console says so, and the database
  // refuses it on its own.
  expect(await tryToApprove(ana.page, approval)).toContain('who may not approve it too');
  expect(await approveInDatabase(await sessionOf(ana.context), approval)).toBe(
    `approval ${approval} was requested by ana@example.com, who may not approve it too`,
  );
  // Her e-mail and name change at the IdP: the names no longer match, the person still does.
  Object.assign(PEOPLE[0]!, { name: 'Ana Lima', email: 'ana.lima@example.com' });
  const renamed = await signIn('ana');
  expect(await renamed.page.locator('.who').innerText()).toContain('Ana Lima');
  expect(await tryToApprove(renamed.page, approval)).toContain('who may not approve it too');
  expect(await approveInDatabase(await sessionOf(renamed.context), approval)).toBe(
    `approval ${approval} was requested by ana@example.com, who may not approve it too`,
  );
  expect((await db.sql`select status from bulkhead_approvals where id = ${approval}`)[0]).toEqual({
    status: 'pending',
  });

  // Bob, another person with the approve right, approves; it runs.
  const bob = await signIn('bob');
  expect(await tryToApprove(bob.page, approval)).not.toContain('may not');
  let status = '';
  for (let i = 0; i < 200 && status !== 'executed'; i++) {
    [{ status } = { status: '' }] = await db.sql<{ status: string }[]>`
      select status from bulkhead_approvals where id = ${approval}`;
    if (status !== 'executed') await new Promise((r) => setTimeout(r, 50));
  }
  expect(status).toBe('executed');
  const [decided] = await db.sql`
    select p.subject from bulkhead_approvals a join bulkhead_tokens t on t.id = a.decided_by_token_id
      join bulkhead_persons p on p.id = t.person_id where a.id = ${approval}`;
  expect(decided).toEqual({ subject: 'bob' });

  // Revoked in the page (the token's owner is shown by the person's name), the server refuses it.
  await renamed.page.getByRole('link', { name: 'My tokens' }).click();
  const row = renamed.page.locator(`#token-${tokenId}`);
  expect(await row.locator('td').nth(4).innerText()).toBe('Ana Lima');
  expect(await listStatus(new URL('/mcp', admin.url), token)).toBe(200);
  await row.getByRole('button', { name: `Revoke token ${tokenId}` }).click();
  expect(await renamed.page.getByRole('status').innerText()).toBe(
    `Token ${tokenId} is revoked: its server refuses it from now on.`,
  );
  expect(await listStatus(new URL('/mcp', admin.url), token)).toBe(401);
  const events = await db.sql<{ tool: string; outcome: string; person: string }[]>`
    select tool, outcome, arguments->'person'->>'id' as person from audit_events
    where method = 'console/my-tokens' order by seq`;
  const [anaId] = await db.sql`select id from bulkhead_persons where subject = 'ana'`;
  expect(events).toEqual([
    { tool: 'issue_token', outcome: 'ok', person: anaId!.id },
    { tool: 'revoke_token', outcome: 'ok', person: anaId!.id },
  ]);
  await Promise.all([ana.context.close(), renamed.context.close(), bob.context.close()]);
}, 120_000);

it('a person whose groups hold no token right reads which right is missing, and is offered no form', async () => {
  const carla = await signIn('carla');
  await carla.page.getByRole('link', { name: 'My tokens' }).click();
  expect(await carla.page.locator('#missing-rights').innerText()).toBe(
    "You cannot issue tokens of your own: none of your groups (support) is mapped to hold tokens. An operator gives a group that right with `bulkhead groups add <group> --tokens <server>` (or --tokens <server>:<scope>, or on the console's Groups page); it counts from your next page.",
  );
  expect(await carla.page.getByRole('form').count()).toBe(0);
  await carla.context.close();
}, 60_000);
