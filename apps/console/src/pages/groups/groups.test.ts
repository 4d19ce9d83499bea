import { createLogger } from '@bulkhead/core';
import { setGroup } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../../app.tsx';
import { signedIn } from '../../fixtures/people.ts';
import { discoveredServers } from '../../fixtures/servers.ts';

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';
let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;
let olga: { cookie: string; csrf: string };
let bo: { cookie: string; csrf: string };

beforeAll(async () => {
  db = await createTestDatabase();
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger,
    publicUrl: ORIGIN,
    oauthServers: discoveredServers(),
  });
  olga = await signedIn(db, consoleSql, 'olga@example.test', ['approvals:decide', 'tokens:manage']);
  bo = await signedIn(db, consoleSql, 'bo@example.test', ['approvals:decide']);
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'cli:test',
  });
});
afterAll(async () => {
  await consoleApp.close();
  await db.drop();
});

const request = (who: { cookie: string; csrf: string }, path: string, form?: Record<string, string>) =>
  consoleApp.app.request(`${ORIGIN}${path}`, {
    method: form ? 'POST' : 'GET',
    headers: {
      host: '127.0.0.1:3100',
      cookie: who.cookie,
      ...(form ? { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' } : {}),
    },
    ...(form ? { body: new URLSearchParams({ _csrf: who.csrf, ...form }) } : {}),
  });

async function groups() {
  return db.sql`select idp_group, approve, operate, tokens, updated_by from bulkhead_groups order by idp_group`;
}

it('shows and edits the same group mapping as `bulkhead groups`, every change audited under the operator', async () => {
  const page = await (await request(olga, '/operator/groups')).text();
  expect(page).toContain('<code><bdi>finance</bdi></code>');
  expect(page).toContain('<td data-label="Rights">approve admin</td>');

  const saved = await request(olga, '/operator/groups', {
    group: 'support',
    approve: 'customer',
    tokens: 'customer:account:read dev-knowledge',
  });
  expect(saved.status).toBe(303);
  const bad = await request(olga, '/operator/groups', { group: 'x', approve: 'nowhere' });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain('--approve: &quot;nowhere&quot; is not an MCP server');
  expect((await request(olga, '/operator/groups/remove', { group: 'finance' })).status).toBe(303);
  expect(await groups()).toEqual([
    {
      idp_group: 'support',
      approve: ['customer'],
      operate: false,
      tokens: ['customer:account:read', 'dev-knowledge'],
      updated_by: 'console: olga@example.test',
    },
  ]);
  const events = await db.sql`
    select tool, outcome, arguments->>'person' as person from audit_events
    where method = 'console/operator' and tool in ('set_group', 'remove_group') order by seq`;
  expect(events).toEqual([
    { tool: 'set_group', outcome: 'ok', person: 'olga@example.test' },
    { tool: 'set_group', outcome: 'invalid_arguments', person: 'olga@example.test' },
    { tool: 'remove_group', outcome: 'ok', person: 'olga@example.test' },
  ]);
});

it('is an operator page: an approver without the operator right is refused, and so is the database call', async () => {
  expect((await request(bo, '/operator/groups')).status).toBe(403);
  expect((await request(bo, '/operator/groups', { group: 'mine', operate: 'on' })).status).toBe(403);
  await expect(
    consoleSql`select bulkhead_operator_set_group(${bo.cookie.split('=')[1]!}, 'mine', '{}', true, '{}')`,
  ).rejects.toMatchObject({ code: '42501' });
  expect((await groups()).map((g) => g.idp_group)).not.toContain('mine');
});
