import { randomBytes } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/client';
import { setGroup } from '@bulkhead/core/operator';
import { connectTestClient, issueTestToken } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { oauthGrant, signedIn } from '../apps/console/src/fixtures/people.ts';
import { adminServer } from '../servers/admin/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

// Offboarding by SCIM 2.0 (issue 46, item 4): an IdP's SCIM client simulated by real HTTP requests to the
// running console; the person's tokens tried by real MCP clients at the running admin server.

let db: TestDatabase;
let admin: ServerProcess;
let consoleServer: ServerProcess;
const SCIM_TOKEN = `bh_scim_${randomBytes(32).toString('base64url')}`;
const SCIM_JSON = 'application/scim+json';

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  // The owner's step (`bulkhead scim set-token`): only the token's hash is in the database.
  await db.sql`select bulkhead_scim_set_token_hash(sha256(convert_to(${SCIM_TOKEN}, 'UTF8')))`;
  [admin, consoleServer] = await Promise.all([
    spawnServer('admin', (await db.as('admin')).url),
    spawnServer('console', (await db.as('console')).url, { BULKHEAD_SCIM_TOKEN: SCIM_TOKEN }),
  ]);
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
}, 120_000);
afterAll(async () => {
  await Promise.all([admin?.stop(), consoleServer?.stop()]);
  await db.drop();
});

/** A request as an IdP's SCIM client sends it. */
async function scim(method: string, path: string, body?: unknown, token: string | null = SCIM_TOKEN) {
  const res = await fetch(new URL(`/scim/v2${path}`, consoleServer.url), {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { 'content-type': SCIM_JSON } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), body: text ? JSON.parse(text) : null };
}

const newUser = (login: string, name: string) => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  userName: `${login}@example.com`,
  externalId: `00u${login}`,
  name: { givenName: name.split(' ')[0], familyName: name.split(' ')[1] },
  emails: [{ value: `${login}@example.com`, type: 'work', primary: true }],
  active: true,
});

const patchOp = (Operations: unknown[]) => ({
  schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
  Operations,
});

const mayApprove = async (person: string) =>
  (await db.sql<{ ok: boolean }[]>`select bulkhead_person_may_approve(${person}, 'admin') as ok`)[0]!.ok;

/** Calls a read tool until the server refuses the token; resolves with when it first did. */
async function firstRefusal(client: Client): Promise<number> {
  for (;;) {
    try {
      await client.callTool({ name: 'list_invoices', arguments: {} });
    } catch (err) {
      if (/invalid_token/.test(String(err))) return performance.now();
      throw err;
    }
  }
}

it('refuses a missing or wrong bearer with 401, audited', async () => {
  expect((await scim('GET', '/Users', undefined, null)).status).toBe(401);
  const wrong = await scim('GET', '/Users', undefined, `bh_scim_${'x'.repeat(43)}`);
  expect(wrong.status).toBe(401);
  expect(wrong.type).toContain(SCIM_JSON);
  expect(wrong.body).toMatchObject({
    schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
    status: '401',
  });
  const [e] = await db.sql<{ outcome: string; tool: string }[]>`
    select outcome, tool from audit_events where method = 'console/scim' order by seq desc limit 1`;
  expect(e).toEqual({ outcome: 'unauthorized', tool: 'bearer' });
});

it("the console's login cannot offboard or regroup by SQL without the SCIM token", async () => {
  const consoleSql = (await db.as('console')).sql;
  await expect(consoleSql`update bulkhead_persons set deactivated_at = now()`).rejects.toThrow(
    /permission denied/,
  );
  await expect(
    consoleSql`select * from bulkhead_scim_put_user(${'not the token'}, null, null, 'x@example.com', null, null, null,
      true, 'r')`,
  ).rejects.toThrow('the SCIM bearer token is not the one the owner set');
  await expect(consoleSql`select bulkhead_scim_set_token_hash(sha256('mine'))`).rejects.toThrow(
    /permission denied/,
  );
});

it('creates a user, finds it by userName, and a group PATCH changes their rights', async () => {
  const created = await scim('POST', '/Users', newUser('gina', 'Gina Holt'));
  expect(created.status).toBe(201);
  expect(created.type).toContain(SCIM_JSON);
  expect(created.body).toMatchObject({ userName: 'gina@example.com', externalId: '00ugina', active: true });
  const id = created.body.id as string;
  expect((await scim('POST', '/Users', newUser('gina', 'Gina Holt'))).status).toBe(409);

  const found = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "GINA@example.com"')}`);
  expect(found.body).toMatchObject({ totalResults: 1, Resources: [{ id, userName: 'gina@example.com' }] });
  const none = await scim('GET', `/Users?filter=${encodeURIComponent('userName eq "nobody@example.com"')}`);
  expect(none.body.totalResults).toBe(0);

  const group = await scim('POST', '/Groups', { displayName: 'finance', members: [] });
  expect(group.status).toBe(201);
  expect(await mayApprove(id)).toBe(false);
  const add = await scim(
    'PATCH',
    `/Groups/${group.body.id}`,
    patchOp([{ op: 'add', path: 'members', value: [{ value: id }] }]),
  );
  expect(add.status).toBe(200);
  expect(add.body.members).toEqual([expect.objectContaining({ value: id })]);
  expect(await mayApprove(id)).toBe(true);
  const remove = await scim(
    'PATCH',
    `/Groups/${group.body.id}`,
    patchOp([{ op: 'remove', path: `members[value eq "${id}"]` }]),
  );
  expect(remove.body.members).toEqual([]);
  expect(await mayApprove(id)).toBe(false);
  const [e] = await db.sql<{ tool: string; result_summary: Record<string, unknown> }[]>`
    select tool, result_summary from audit_events where method = 'console/scim' order by seq desc limit 1`;
  expect(e).toEqual({
    tool: 'patch_group',
    result_summary: { group: group.body.id, displayName: 'finance', joined: [], left: [id] },
  });
});

it('PATCH active=false revokes every token, grant, session and right of the person, refused at the server, audited', async () => {
  const created = await scim('POST', '/Users', newUser('hugo', 'Hugo Lind'));
  const id = created.body.id as string;
  const [finance] = (await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "finance"')}`))
    .body.Resources as { id: string }[];
  await scim(
    'PATCH',
    `/Groups/${finance!.id}`,
    patchOp([{ op: 'add', path: 'members', value: [{ value: id }] }]),
  );
  expect(await mayApprove(id)).toBe(true);

  // Two MCP tokens owned by the person, an approver token of theirs with a console session, and an OAuth
  // grant they gave, with its access token.
  const owner = 'hugo@example.com';
  const tokens = await Promise.all(
    ['Claude (Hugo)', 'Cursor (Hugo)'].map((label) => issueTestToken(db.sql, adminServer, { label, owner })),
  );
  const approver = await signedIn(db, (await db.as('console')).sql, owner, [
    'approvals:decide',
    'grants:issue',
  ]);
  const grant = await oauthGrant(db, {
    server: 'admin',
    scopes: ['invoices:read'],
    person: owner,
    clientName: 'VS Code',
    grantedBy: { tokenId: approver.tokenId, label: owner },
  });
  const clients = await Promise.all(
    [...tokens, grant.token].map((t, i) => connectTestClient(admin.url, t, `scim-${i}`)),
  );
  for (const c of clients) await c.callTool({ name: 'list_invoices', arguments: {} });
  // A request they filed, pending.
  const [draft] = await db.sql<{ number: string }[]>`
    select number from invoices where status = 'draft' order by number limit 1`;
  const filed = await clients[0]!.callTool({
    name: 'send_invoice',
    arguments: { invoice_number: draft!.number },
  });
  const approval = (filed.structuredContent as { approval_id: string }).approval_id;

  const answer = await scim(
    'PATCH',
    `/Users/${id}`,
    patchOp([{ op: 'Replace', path: 'active', value: 'False' }]),
  );
  const answered = performance.now();
  expect(answer.status).toBe(200);
  expect(answer.body.active).toBe(false);
  const refusals = await Promise.all(clients.map(firstRefusal));
  const ms = refusals.map((t) => Math.round(t - answered));
  console.log(`SCIM deactivation → first refusal at admin per token (ms): ${ms.join(', ')}`);

  const sessions = await db.sql`select 1 from bulkhead_console_sessions where token_id = ${approver.tokenId}`;
  expect(sessions.length).toBe(0);
  const [g] = await db.sql<{ revoked_reason: string }[]>`
    select revoked_reason from bulkhead_oauth_grants where id = ${grant.grantId}`;
  expect(g!.revoked_reason).toBe('person_offboarded');
  expect(await mayApprove(id)).toBe(false);
  const [a] = await db.sql<{ status: string; withdrawn_reason: string }[]>`
    select status, withdrawn_reason from bulkhead_approvals where id = ${approval}`;
  expect(a).toEqual({
    status: 'withdrawn',
    withdrawn_reason: `the person was offboarded by SCIM (PATCH /scim/v2/Users/${id})`,
  });
  const [e] = await db.sql<
    { tool: string; arguments: { request: string }; result_summary: { revoked: Record<string, unknown> } }[]
  >`
    select tool, arguments, result_summary from audit_events where method = 'console/scim' order by seq desc limit 1`;
  expect(e!.tool).toBe('deactivate_user');
  expect(e!.arguments.request).toBe(`PATCH /scim/v2/Users/${id}`);
  const revoked = e!.result_summary.revoked as { tokens: { token: string }[]; grants: { grant: string }[] };
  expect(revoked.tokens.map((t) => t.token).sort()).toEqual(
    [...tokens.map((t) => t.split('_')[2]!), approver.tokenId, grant.tokenId].sort(),
  );
  expect(revoked.grants.map((x) => x.grant)).toEqual([grant.grantId]);
  expect(e!.result_summary.revoked).toMatchObject({ sessions: 1, approvals_withdrawn: [{ approval }] });
  await Promise.all(clients.map((c) => c.close()));
}, 60_000);

it('DELETE offboards the person and the user is gone', async () => {
  const id = (await scim('POST', '/Users', newUser('ivan', 'Ivan Roth'))).body.id as string;
  const token = await issueTestToken(db.sql, adminServer, {
    label: 'Claude (Ivan)',
    owner: 'ivan@example.com',
  });
  expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
  expect((await scim('GET', `/Users/${id}`)).status).toBe(404);
  const client = await connectTestClient(admin.url, token, 'scim-delete').catch((err: unknown) => err);
  if (!(client instanceof Error)) await expect(firstRefusal(client as Client)).resolves.toBeGreaterThan(0);
  const [t] = await db.sql<{ revoked: boolean }[]>`
    select revoked_at is not null as revoked from bulkhead_tokens where id = ${token.split('_')[2]!}`;
  expect(t!.revoked).toBe(true);
});
