import { createAuditWriter } from '@bulkhead/audit';
import { createLogger } from '@bulkhead/core';
import { getToken, issueToken } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../app.tsx';
import { approverToken, oauthGrant, signedIn } from '../fixtures/people.ts';
import { discoveredServers } from '../fixtures/servers.ts';
import { shownFingerprint } from '../pages/tokens/data.ts';

// A person who may decide approvals and grant OAuth access, but not operate: every operator page and
// action is refused, by the console (403, audited) and again by the database.

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';
const ANA = 'ana@example.test';
const BO = 'bo@example.test';

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let bo: { tokenId: string; token: string; sid: string; cookie: string; csrf: string };
let operator: { tokenId: string; token: string; sid: string; cookie: string; csrf: string };
let anaToken: string;
let anaSecret: string;
let anaGrant: string;

beforeAll(async () => {
  db = await createTestDatabase();
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: ORIGIN,
    oauthServers: discoveredServers(),
  });
  bo = await signedIn(db, consoleSql, BO, ['approvals:decide', 'grants:issue']);
  operator = await signedIn(db, consoleSql, 'olga@example.test', ['approvals:decide', 'tokens:manage']);
  const { token, record } = await issueToken(db.sql, {
    server: 'admin',
    label: 'Claude Code (Ana)',
    scopes: ['invoices:read'],
    expiresAt: null,
    createdBy: 'test',
    owner: ANA,
  });
  anaToken = record.id;
  anaSecret = token;
  anaGrant = (
    await oauthGrant(db, {
      server: 'admin',
      scopes: ['invoices:read'],
      person: ANA,
      clientName: 'Cursor',
      grantedBy: { tokenId: bo.tokenId, label: BO },
    })
  ).grantId;
});

afterAll(async () => {
  await consoleApp.close();
  await db.drop();
});

const request = (who: { cookie: string }, path: string, form?: Record<string, string>) =>
  consoleApp.app.request(`${ORIGIN}${path}`, {
    method: form ? 'POST' : 'GET',
    headers: {
      host: '127.0.0.1:3100',
      cookie: who.cookie,
      ...(form ? { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(form ? { body: new URLSearchParams(form) } : {}),
  });

const ANA_PATH = `/operator/persons/${encodeURIComponent(ANA)}`;
const PAGES = [
  '/operator/tokens',
  '/operator/tokens?state=all&q=ana&server=admin',
  '/operator/tokens/new',
  '/operator/tokens/new?server=admin',
  ANA_PATH,
  `${ANA_PATH}/revoke`,
  '/operator/servers/admin',
  '/operator/audit',
  '/operator/charts',
  '/operator/tools',
];

async function refusals(person: string) {
  return db.sql<{ tool: string; path: string }[]>`
    select tool, arguments->>'path' as path from audit_events
    where server = 'console' and method = 'console/operator' and outcome = 'forbidden'
      and arguments->>'person' = ${person}
    order by seq`;
}

it('every operator page answers 403 to an approver without the operator right, and audits it', async () => {
  const { id } = await createAuditWriter(db.sql).append({
    server: 'admin',
    method: 'tools/call',
    tool: 'get_invoice',
    outcome: 'ok',
    requestId: 'r-1',
    durationMs: 3,
  });
  const [event] = await db.sql<{ seq: string }[]>`select seq::text from audit_events where id = ${id}`;
  const pages = [
    ...PAGES,
    `/operator/audit/events/${event!.seq}`,
    '/operator/audit/export?format=jsonl',
    '/operator/audit/export?format=csv&server=admin',
    '/operator/charts?bucket=day',
  ];
  for (const path of pages) {
    const res = await request(bo, path);
    expect(res.status, path).toBe(403);
    expect(await res.text()).toContain('This page is for operators.');
    // The same page opens for an operator: the refusal is the missing right, nothing else.
    expect((await request(operator, path)).status, path).toBe(200);
  }
  expect(await refusals(BO)).toEqual(pages.map((p) => ({ tool: 'page', path: new URL(p, ORIGIN).pathname })));
});

it('every operator action answers 403 to an approver without the operator right, does nothing, and audits it', async () => {
  const before = await refusals(BO);
  const tokens = await db.sql`select id from bulkhead_tokens`;
  const posts: [string, Record<string, string>][] = [
    [
      '/operator/tokens',
      { server: 'admin', label: 'Sneaky', person: BO, scopes: 'invoices:read', expires: '90d' },
    ],
    [`/operator/tokens/${anaToken}/revoke`, { back: ANA_PATH }],
    [`/operator/grants/${anaGrant}/revoke`, { back: ANA_PATH }],
    [`${ANA_PATH}/revoke`, { shown: shownFingerprint([{ id: anaToken }], [{ id: anaGrant }]) }],
    ['/operator/tools/off', { server: 'admin', tool: 'send_invoice', reason: 'incident' }],
    ['/operator/tools/on', { server: 'admin', tool: 'send_invoice' }],
  ];
  for (const [path, form] of posts) {
    const res = await request(bo, path, { _csrf: bo.csrf, ...form });
    expect(res.status, path).toBe(403);
    expect(await res.text()).toContain('This page is for operators.');
  }
  expect((await refusals(BO)).slice(before.length)).toEqual(posts.map(([path]) => ({ tool: 'page', path })));
  expect((await getToken(db.sql, anaToken))!.revokedAt).toBeNull();
  const [grant] = await db.sql`select revoked_at from bulkhead_oauth_grants where id = ${anaGrant}`;
  expect(grant!.revoked_at).toBeNull();
  expect(await db.sql`select id from bulkhead_tokens`).toEqual(tokens);
  expect(await db.sql`select tool from bulkhead_tool_switches`).toEqual([]);
});

describe('the database', () => {
  const refused = { code: '42501' };
  /** Every operator function, called by the console's role with `proof` as the operator's proof. */
  const calls = (proof: string) => [
    consoleSql`select * from bulkhead_operator_tokens(${proof})`,
    consoleSql`select * from bulkhead_operator_issue_token(${proof}, 'abcdefghijkm', ${Buffer.alloc(32)}, 'admin',
      'Sneaky', ${['invoices:read']}, null, ${BO}, null)`,
    consoleSql`select bulkhead_operator_revoke_token(${proof}, ${anaToken})`,
    consoleSql`select bulkhead_operator_revoke_grant(${proof}, ${anaGrant})`,
    consoleSql`select * from bulkhead_operator_revoke_person(${proof}, ${ANA})`,
    consoleSql`select * from bulkhead_operator_tool_switches(${proof})`,
    consoleSql`select bulkhead_operator_switch_tool(${proof}, 'admin', 'send_invoice', true, 'incident')`,
  ];

  it('refuses every operator function to the console role with the proof of an approver who may not operate', async () => {
    for (const proof of [bo.sid, bo.token])
      for (const call of calls(proof)) await expect(call).rejects.toMatchObject(refused);
  });

  it('refuses them with an MCP token, an operator token id alone, an unknown one and a revoked operator token', async () => {
    const revoked = await approverToken(db, 'olga@example.test', ['tokens:manage']);
    await db.sql`update bulkhead_tokens set revoked_at = now() where id = ${revoked.tokenId}`;
    for (const proof of [anaSecret, operator.tokenId, 'nosuchtoken1', revoked.token])
      for (const call of calls(proof)) await expect(call).rejects.toMatchObject(refused);
    expect((await getToken(db.sql, anaToken))!.revokedAt).toBeNull();
  });

  it('answers an operator, by session or by token', async () => {
    for (const proof of [operator.sid, operator.token]) {
      const rows = await consoleSql<{ id: string }[]>`select id from bulkhead_operator_tokens(${proof})`;
      expect(rows.map((r) => r.id)).toContain(anaToken);
    }
  });
});
