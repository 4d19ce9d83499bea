import { createLogger } from '@bulkhead/core';
import { getToken, issueToken } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../../app.tsx';
import { oauthGrant, signedIn } from '../../fixtures/people.ts';
import { discoveredServers } from '../../fixtures/servers.ts';

// The operator's pages and actions through the app, against the real database: what the lists show,
// what the issue form refuses, where a revocation returns to, and what the person's revocation guards.

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let olga: { tokenId: string; cookie: string; csrf: string };

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`insert into customers (id, name, email, language) values ('C-1001', 'Acme GmbH', 'ap@acme.test', 'de')`;
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: ORIGIN,
    oauthServers: discoveredServers(),
  });
  olga = await signedIn(db, consoleSql, 'olga@example.test', [
    'approvals:decide',
    'tokens:manage',
    'grants:issue',
  ]);
});

afterAll(async () => {
  await consoleApp.close();
  await db.drop();
});

const get = (path: string) =>
  consoleApp.app.request(`${ORIGIN}${path}`, { headers: { host: '127.0.0.1:3100', cookie: olga.cookie } });

const post = (path: string, fields: [string, string][]) =>
  consoleApp.app.request(`${ORIGIN}${path}`, {
    method: 'POST',
    headers: {
      host: '127.0.0.1:3100',
      cookie: olga.cookie,
      origin: ORIGIN,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams([['_csrf', olga.csrf], ...fields]),
  });

const mcpToken = async (label: string, owner: string, server = 'admin') =>
  (
    await issueToken(db.sql, {
      server,
      label,
      scopes: ['invoices:read'],
      expiresAt: null,
      createdBy: 'test',
      owner,
    })
  ).record.id;

/** The token ids of a list page's token table, in order. */
async function listed(path: string): Promise<string[]> {
  const html = await (await get(path)).text();
  return [...html.matchAll(/<tr id="token-(\w+)"/g)].map((m) => m[1]!);
}

async function lastEvent(tool: string) {
  const [e] = await db.sql<
    { outcome: string; arguments: Record<string, unknown>; result_summary: unknown }[]
  >`
    select outcome, arguments, result_summary from audit_events
    where method = 'console/operator' and tool = ${tool} order by seq desc limit 1`;
  return e;
}

describe('the lists', () => {
  it('filter by state, server, person (as the database compares persons) and free text', async () => {
    const live = await mcpToken('Laptop of Pia', 'pia@example.test');
    const gone = await mcpToken('Old laptop of Pia', 'PIA@example.test ');
    await db.sql`update bulkhead_tokens set revoked_at = now() where id = ${gone}`;
    const lapsed = await mcpToken('Pia on the train', 'pia@example.test');
    const other = await mcpToken('Laptop of Quinn', 'quinn@example.test', 'dev-knowledge');
    // A name that only looks the same (a Cyrillic і) is the same person: names compare by one key, with
    // Unicode's confusables folded (issue 42: one person, one spelling).
    const lookalike = await mcpToken('Laptop of Pіa', 'pіa@example.test');
    await db.sql`update bulkhead_tokens set expires_at = now() - interval '1 second' where id = ${lapsed}`;

    expect(await listed('/operator/persons/pia%40example.test')).toEqual([lookalike, live]);
    expect(await listed('/operator/persons/pia%40example.test?state=all')).toEqual([
      lookalike,
      lapsed,
      gone,
      live,
    ]);
    expect(await listed('/operator/persons/pia%40example.test?state=revoked')).toEqual([gone]);
    expect(await listed('/operator/persons/pia%40example.test?state=expired')).toEqual([lapsed]);
    expect(await listed('/operator/tokens?q=laptop')).toEqual([lookalike, other, live]);
    expect(await listed('/operator/tokens?q=laptop&server=dev-knowledge')).toEqual([other]);
    expect(await listed('/operator/servers/dev-knowledge')).toEqual([other]);
    expect(await listed(`/operator/tokens?q=${gone}&state=all`)).toEqual([gone]);
  });

  it('shows every text of a token and a grant for what it is, hidden characters marked', async () => {
    const id = await mcpToken('Invoice bot \u202Eexe.fdp', 'rita@example.test');
    await oauthGrant(db, {
      server: 'admin',
      scopes: ['invoices:read'],
      person: 'rita@example.test',
      clientName: 'Helper\u200B app',
      grantedBy: { tokenId: olga.tokenId, label: 'olga@example.test' },
    });
    const html = await (await get('/operator/persons/rita%40example.test')).text();
    expect(html).toContain(`Invoice bot <mark class="hidden">[U+202E]</mark>exe.fdp`);
    expect(html).toContain(`Helper<mark class="hidden">[U+200B]</mark> app`);
    expect(html).not.toMatch(/[\u202E\u200B]/);
    expect(await listed('/operator/tokens?q=helper')).toHaveLength(1);
    expect(await listed('/operator/tokens?q=helper')).not.toContain(id);
  });
});

describe('issuing', () => {
  const form = (fields: Record<string, string | string[]>) =>
    Object.entries(fields).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => [k, x]) : [[k, v]])) as [
      string,
      string,
    ][];
  const admin = { server: 'admin', label: 'Claude (Sam)', person: 'sam@example.test', expires: '90d' };
  const customer = {
    ...admin,
    server: 'customer',
    scopes: discoveredServers().find((s) => s.name === 'customer')!.scopes,
  };

  it('refuses what the CLI refuses, issues nothing, and audits each refusal', async () => {
    const before = await db.sql`select id from bulkhead_tokens`;
    const cases: [Record<string, string | string[]>, string][] = [
      [{ ...admin, scopes: 'invoices:read', label: '' }, 'Give a label'],
      [{ ...admin, scopes: 'invoices:read', person: ' ' }, 'Name the person'],
      [{ ...admin }, 'Tick at least one scope.'],
      [{ ...admin, scopes: ['invoices:read', 'account:read'] }, 'account:read: not a scope of admin.'],
      [{ ...admin, scopes: 'invoices:read', customer: 'C-1001' }, 'admin tokens are not bound to a customer'],
      [{ ...customer }, 'Choose a customer'],
      [{ ...customer, customer: 'C-9999' }, 'Customer C-9999 does not exist'],
      [{ ...admin, scopes: 'invoices:read', expires: '10y' }, 'Choose how long the token lives.'],
    ];
    for (const [fields, error] of cases) {
      const res = await post('/operator/tokens', form(fields));
      expect(res.status, error).toBe(400);
      expect(await res.text()).toContain(error);
      expect(await lastEvent('issue_token')).toMatchObject({
        outcome: 'bad_request',
        result_summary: { reason: expect.stringContaining(error) },
      });
    }
    expect(await db.sql`select id from bulkhead_tokens`).toEqual(before);
  });

  it('binds a customer-server token to the chosen customer', async () => {
    const res = await post('/operator/tokens', form({ ...customer, customer: 'C-1001' }));
    expect(res.status).toBe(200);
    const id = /bh_customer_([a-z2-9]{12})_/.exec(await res.text())![1]!;
    expect(await getToken(db.sql, id)).toMatchObject({
      server: 'customer',
      customerId: 'C-1001',
      owner: 'sam@example.test',
      scopes: customer.scopes,
      createdBy: 'console: olga@example.test',
    });
  });
});

describe('revoking', () => {
  it('returns to the operator page it came from with a notice, and never elsewhere', async () => {
    const id = await mcpToken('Tablet of Tom', 'tom@example.test');
    const res = await post(`/operator/tokens/${id}/revoke`, [
      ['back', '/operator/persons/tom%40example.test?q=x'],
    ]);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(
      `/operator/persons/tom%40example.test?q=x&notice=token-revoked&id=${id}`,
    );
    expect(await (await get(res.headers.get('location')!)).text()).toContain(
      'revoked: its server refuses it',
    );
    expect(await lastEvent('revoke_token')).toMatchObject({
      outcome: 'ok',
      arguments: { token_id: id, person: 'olga@example.test' },
      result_summary: { revoked: true, server: 'admin', label: 'Tablet of Tom', owner: 'tom@example.test' },
    });
    for (const back of [
      'https://evil.example/operator/x',
      '//evil.example/operator/',
      '/logout',
      '/operator\\..\\x',
    ]) {
      const again = await post(`/operator/tokens/${id}/revoke`, [['back', back]]);
      expect(again.headers.get('location'), back).toBe(`/operator/tokens?notice=token-unchanged&id=${id}`);
    }
  });

  it('revokes a grant with its access token', async () => {
    const grant = await oauthGrant(db, {
      server: 'admin',
      scopes: ['invoices:read'],
      person: 'uma@example.test',
      clientName: 'Cursor',
      grantedBy: { tokenId: olga.tokenId, label: 'olga@example.test' },
    });
    const res = await post(`/operator/grants/${grant.grantId}/revoke`, []);
    expect(res.headers.get('location')).toBe(`/operator/tokens?notice=grant-revoked&id=${grant.grantId}`);
    expect((await getToken(db.sql, grant.tokenId))!.revokedAt).not.toBeNull();
    const [row] = await db.sql`select revoked_reason from bulkhead_oauth_grants where id = ${grant.grantId}`;
    expect(row).toEqual({ revoked_reason: 'revoked_by_operator' });
  });

  it("refuses a person's revocation when their tokens changed since the confirmation page", async () => {
    const first = await mcpToken('Phone of Vic', 'vic@example.test');
    const page = await (await get('/operator/persons/vic%40example.test/revoke')).text();
    const shown = /name="shown" value="([0-9a-f]{64})"/.exec(page)![1]!;
    const second = await mcpToken('Laptop of Vic', 'vic@example.test');
    const res = await post('/operator/persons/vic%40example.test/revoke', [['shown', shown]]);
    expect(res.status).toBe(409);
    const again = await res.text();
    expect(again).toContain('changed since the page was drawn: nothing was revoked');
    expect(again).toContain('Laptop of Vic');
    for (const id of [first, second]) expect((await getToken(db.sql, id))!.revokedAt).toBeNull();
    expect(await lastEvent('revoke_person')).toMatchObject({
      outcome: 'bad_request',
      result_summary: { reason: 'changed_since_shown' },
    });

    const fresh = /name="shown" value="([0-9a-f]{64})"/.exec(again)![1]!;
    const done = await post('/operator/persons/vic%40example.test/revoke', [['shown', fresh]]);
    expect(done.headers.get('location')).toBe(
      '/operator/persons/vic%40example.test?notice=person-revoked&tokens=2&grants=0',
    );
    for (const id of [first, second]) expect((await getToken(db.sql, id))!.revokedAt).not.toBeNull();
  });
});
