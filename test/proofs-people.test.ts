import { randomBytes } from 'node:crypto';
import { setGroup } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';

// Issue 46, tried as the console's own login (a leaked DATABASE_URL, an SQL injection): what the database
// checks itself when a person signs in by OpenID Connect, and — said plainly — what it cannot: the ID
// token's signature. Each limit below is one a compromised login really has; the tests show exactly it.

let db: TestDatabase;
let console: Sql;
const ISSUER = 'https://idp.example.com';
const CLIENT = 'bulkhead-console';
const random = () => randomBytes(32).toString('base64url');
const refused = { code: '42501' };

/** A compact JWS with these claims and a signature nobody checks here (the database cannot). */
function idToken(claims: Record<string, unknown>): string {
  const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'RS256', kid: 'k1' })}.${part(claims)}.${randomBytes(64).toString('base64url')}`;
}

/** A sign-in started and resumed as the console does: its state and nonce. */
async function started(issuer = ISSUER): Promise<{ state: string; nonce: string }> {
  const [state, binding, nonce] = [random(), random(), random()];
  await console`select bulkhead_oidc_begin(${state}, ${binding}, ${issuer}, ${CLIENT}, ${nonce}, ${random()}, null,
    '127.0.0.1')`;
  const resumed = await console`select nonce from bulkhead_oidc_resume(${state}, ${[binding]})`;
  expect(resumed).toEqual([{ nonce }]);
  return { state, nonce };
}

function claims(nonce: string, extra: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return {
    iss: ISSUER,
    aud: CLIENT,
    sub: 'ana-1',
    nonce,
    exp: now + 300,
    iat: now,
    name: 'Ana Berg',
    email: 'ana@example.com',
    groups: ['finance'],
    ...extra,
  };
}

function signIn(state: string, token: string, sid = random()) {
  return console<{ outcome: string; tokenId: string | null; scopes: string[] }[]>`
    select outcome, token_id as "tokenId", scopes
    from bulkhead_console_oidc_sign_in(${state}, ${token}, 'groups', ${sid}, ${random()}, 1)`;
}

beforeAll(async () => {
  db = await createTestDatabase();
  console = (await db.as('console')).sql;
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
});
afterAll(async () => {
  await db.drop();
});

it('opens no session without a sign-in the database started and resumed, and none twice for one', async () => {
  const [state, binding, nonce] = [random(), random(), random()];
  await expect(signIn(state, idToken(claims(nonce)))).rejects.toMatchObject(refused);
  await console`select bulkhead_oidc_begin(${state}, ${binding}, ${ISSUER}, ${CLIENT}, ${nonce}, ${random()}, null, 'x')`;
  // Not resumed by the browser that holds the binding: still refused.
  expect(await console`select 1 from bulkhead_oidc_resume(${state}, ${[random()]})`).toEqual([]);
  await expect(signIn(state, idToken(claims(nonce)))).rejects.toMatchObject(refused);
  expect(await console`select 1 from bulkhead_oidc_resume(${state}, ${[binding]})`).toHaveLength(1);
  expect(await console`select 1 from bulkhead_oidc_resume(${state}, ${[binding]})`).toEqual([]);
  expect((await signIn(state, idToken(claims(nonce))))[0]!.outcome).toBe('ok');
  await expect(signIn(state, idToken(claims(nonce)))).rejects.toThrow('already used');
});

it("reads the claims from the ID token itself and requires the sign-in's nonce, issuer, audience and an unexpired token", async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ nonce: 'another' }, 'does not carry the nonce'],
    [{ iss: 'https://idp.attacker.example' }, 'was issued by https://idp.attacker.example'],
    [{ aud: 'another-client' }, 'is not for client bulkhead-console'],
    [{ exp: Math.floor(Date.now() / 1000) - 600 }, 'has expired'],
    [{ sub: '' }, 'names no subject'],
  ];
  for (const [change, message] of cases) {
    const { state, nonce } = await started();
    await expect(signIn(state, idToken(claims(nonce, change)))).rejects.toThrow(message);
  }
  const { state } = await started();
  await expect(signIn(state, 'not.a-jwt')).rejects.toThrow('malformed');
});

it("re-reads a person's rights from the group mapping at every use, and refuses a person in no mapped group", async () => {
  const { state, nonce } = await started();
  const sid = random();
  const [ok] = await signIn(state, idToken(claims(nonce, { sub: 'ana-2' })), sid);
  expect(ok).toMatchObject({ outcome: 'ok', scopes: ['approvals:decide'] });
  const scopes = async () => (await console`select scopes from bulkhead_console_proof(${sid})`)[0]?.scopes;
  expect(await scopes()).toEqual(['approvals:decide']);
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: true,
    tokens: [],
    operator: 'test',
  });
  expect(await scopes()).toEqual(['approvals:decide', 'tokens:manage']);
  await db.sql`delete from bulkhead_groups where idp_group = 'finance'`;
  expect(await scopes()).toEqual([]);
  const again = await started();
  const [none] = await signIn(again.state, idToken(claims(again.nonce, { sub: 'ana-2' })));
  expect(none).toMatchObject({ outcome: 'no_rights', tokenId: null });
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
  // A person's console identity never opens the console as a pasted token (its secret is nobody's).
  const [identity] = await db.sql`select id from bulkhead_tokens where person_id is not null limit 1`;
  expect(
    await console`select 1 from bulkhead_console_proof(${`bh_console_${identity!.id}_${'A'.repeat(43)}`})`,
  ).toEqual([]);
});

it('cannot verify the signature: a login that starts a sign-in itself and forges an unsigned ID token opens a session, and leaves the forgery on record', async () => {
  const { state, nonce } = await started();
  const forged = idToken(claims(nonce, { sub: 'mallory-as-ana', groups: ['finance'] }));
  const [session] = await signIn(state, forged);
  expect(session).toMatchObject({ outcome: 'ok', scopes: ['approvals:decide'] });
  // What remains is evidence: the session keeps the ID token, to be checked against the IdP's keys.
  const [kept] =
    await db.sql`select id_token from bulkhead_console_sessions where token_id = ${session!.tokenId}`;
  expect(kept).toEqual({ id_token: forged });
  // The console's login reads neither sessions nor sign-ins in flight; it only calls the functions.
  await expect(console`select id_token from bulkhead_console_sessions`).rejects.toMatchObject(refused);
  await expect(console`select nonce from bulkhead_oidc_sign_ins`).rejects.toMatchObject(refused);
  await expect(console`update bulkhead_persons set groups = '{finance}'`).rejects.toMatchObject(refused);
  await expect(
    console`insert into bulkhead_groups (idp_group, operate, updated_by) values ('x', true, 'me')`,
  ).rejects.toMatchObject(refused);
});

it("grants MCP clients OAuth access only within the person's groups' --tokens rights, read at the grant", async () => {
  await setGroup(db.sql, {
    group: 'support',
    approve: [],
    operate: false,
    tokens: ['admin:invoices:read'],
    operator: 'test',
  });
  const { state, nonce } = await started();
  const sid = random();
  await signIn(state, idToken(claims(nonce, { sub: 'sam-1', name: 'Sam', groups: ['support'] })), sid);
  await console`insert into bulkhead_oauth_clients (client_id, source, client_name, redirect_uris) values ('c_people', 'registered', 'Cursor',
    ${['http://127.0.0.1:9/cb']})`;
  const grant = (scopes: string[]) =>
    console`select bulkhead_oauth_grant(${sid}, ${`g_${randomBytes(12).toString('base64url')}`}, 'c_people', 'admin',
      ${scopes}, null, ${`bhc_${random()}`}, 'http://127.0.0.1:9/cb', ${random()}, 'http://127.0.0.1:3101/mcp', 60)`;
  await grant(['invoices:read']);
  await expect(grant(['invoices:read', 'invoices:write'])).rejects.toThrow(
    'Sam may not grant access to admin with scopes invoices:read invoices:write',
  );
  await db.sql`delete from bulkhead_groups where idp_group = 'support'`;
  await expect(grant(['invoices:read'])).rejects.toThrow('lacks grants:issue');
});
