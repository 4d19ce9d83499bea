import { randomBytes } from 'node:crypto';
import { createLogger } from '@bulkhead/core';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../app.tsx';

const logger = createLogger({ level: 'silent' });
const ORIGIN = 'http://127.0.0.1:3100';
const TOKEN = randomBytes(32).toString('base64url');

let db: TestDatabase;
let consoleSql: Sql;
let on: ConsoleApp;
let off: ConsoleApp;

beforeAll(async () => {
  db = await createTestDatabase();
  consoleSql = (await db.as('console')).sql;
  on = createConsoleApp({ sql: consoleSql, logger, publicUrl: ORIGIN, scimToken: TOKEN });
  off = createConsoleApp({ sql: consoleSql, logger, publicUrl: ORIGIN });
});
afterAll(async () => {
  await on.close();
  await off.close();
  await db.drop();
});

const scim = async (app: ConsoleApp, method: string, path: string, body?: unknown) => {
  const res = await app.app.request(`${ORIGIN}/scim/v2${path}`, {
    method,
    headers: {
      host: '127.0.0.1:3100',
      authorization: `Bearer ${TOKEN}`,
      ...(body ? { 'content-type': 'application/scim+json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text && res.status !== 404 ? JSON.parse(text) : text };
};

it('without BULKHEAD_SCIM_TOKEN there is no SCIM: 404', async () => {
  expect(await scim(off, 'GET', '/Users')).toEqual({ status: 404, body: 'Not found.' });
});

it('refuses the right bearer while the database holds no hash of it, then serves once the owner set it', async () => {
  const refused = await scim(on, 'GET', '/Users');
  expect(refused.status).toBe(401);
  expect(refused.body.detail).toMatch(/bulkhead scim set-token/);
  await db.sql`select bulkhead_scim_set_token_hash(sha256(convert_to(${TOKEN}, 'UTF8')))`;
  expect(await scim(on, 'GET', '/Users')).toMatchObject({ status: 200, body: { totalResults: 0 } });
  expect((await scim(on, 'GET', '/ServiceProviderConfig')).body).toMatchObject({
    patch: { supported: true },
  });
});

it("applies Entra's PATCH without a path, and reactivation lets the person back without their tokens", async () => {
  const created = await scim(on, 'POST', '/Users', {
    userName: 'jo@example.com',
    name: { formatted: 'Jo Kim' },
  });
  expect(created.body).toMatchObject({
    userName: 'jo@example.com',
    name: { formatted: 'Jo Kim' },
    active: true,
  });
  const id = created.body.id as string;
  const off_ = await scim(on, 'PATCH', `/Users/${id}`, {
    schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
    Operations: [{ op: 'replace', value: { active: false, 'name.formatted': 'Jo Kim-Lee' } }],
  });
  expect(off_.body).toMatchObject({ active: false, name: { formatted: 'Jo Kim-Lee' } });
  const [p] = await db.sql<{ deactivated: boolean }[]>`
    select deactivated_at is not null as deactivated from bulkhead_persons where id = ${id}`;
  expect(p!.deactivated).toBe(true);
  const back = await scim(on, 'PUT', `/Users/${id}`, { userName: 'jo@example.com', active: true });
  expect(back.body.active).toBe(true);
  const events = await db.sql<{ tool: string }[]>`
    select tool from audit_events where method = 'console/scim' and outcome = 'ok' order by seq`;
  expect(events.map((e) => e.tool)).toEqual(['create_user', 'deactivate_user', 'reactivate_user']);
  expect((await scim(on, 'DELETE', `/Users/${id}`)).status).toBe(204);
  expect(
    (await scim(on, 'GET', `/Users?filter=${encodeURIComponent('userName eq "jo@example.com"')}`)).body,
  ).toMatchObject({ totalResults: 0 });
  const rehired = await scim(on, 'POST', '/Users', { userName: 'jo@example.com', active: true });
  expect(rehired).toMatchObject({ status: 201, body: { id, active: true } });
  expect((await scim(on, 'PATCH', `/Users/pe_nobodyhere22`, { Operations: [] })).status).toBe(404);
  expect((await scim(on, 'GET', `/Users?filter=${encodeURIComponent('name sw "J"')}`)).status).toBe(400);
});
