import { createHash, randomUUID } from 'node:crypto';
import { setGroup } from '@bulkhead/core/operator';
import { connectTestClient } from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, spawnServer, type ServerProcess } from './helpers.ts';
import { startTestIdp, type TestIdp } from './oidc-provider.ts';

// MCP clients by enterprise-managed authorization (issue 46, item 5): a real OpenID Provider
// (oidc-provider) on loopback is the trusted issuer, and the console fetches its keys from the JWKS its
// discovery document names. oidc-provider does not issue ID-JAGs itself (no RFC 8693 exchange for
// them), so the test signs each ID-JAG with the IdP's own private key, handed to the IdP as its signing
// key, as the IdP's token exchange would. The persons are rows as the console's OIDC sign-in leaves them.

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

let db: TestDatabase;
let idp: TestIdp;
let customer: ServerProcess;
let consoleServer: ServerProcess;
let idpKey: CryptoKey;
let issuer: string;
let clientId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
  const pair = await generateKeyPair('RS256', { extractable: true });
  idpKey = pair.privateKey;
  const jwk: JWK = { ...(await exportJWK(pair.privateKey)), kid: 'idp-1', use: 'sig', alg: 'RS256' };
  const [consolePort, customerPort] = [await freePort(), await freePort()];
  const consoleUrl = `http://127.0.0.1:${consolePort}`;
  idp = await startTestIdp([`${consoleUrl}/login/oidc/callback`], [], [jwk]);
  [customer, consoleServer] = await Promise.all([
    spawnServer(
      'customer',
      (await db.as('customer')).url,
      { BULKHEAD_AUTHORIZATION_SERVER: consoleUrl },
      customerPort,
    ),
    spawnServer(
      'console',
      (await db.as('console')).url,
      {
        BULKHEAD_PUBLIC_URL: consoleUrl,
        BULKHEAD_SERVER_URLS: `customer=http://127.0.0.1:${customerPort}`,
        BULKHEAD_OIDC_ISSUER: idp.issuer,
        BULKHEAD_OIDC_CLIENT_ID: idp.clientId,
        BULKHEAD_OIDC_CLIENT_SECRET: idp.clientSecret,
      },
      consolePort,
    ),
  ]);
  await setGroup(db.sql, {
    group: 'support',
    approve: [],
    operate: false,
    tokens: ['customer'],
    operator: 'test',
  });
  await setGroup(db.sql, {
    group: 'finance',
    approve: ['admin'],
    operate: false,
    tokens: [],
    operator: 'test',
  });
  await db.sql`
    insert into bulkhead_persons (id, issuer, subject, name, email, groups, signed_in_at, deactivated_at) values
      ('pe_carla2345678', ${idp.issuer}, 'carla', 'Carla Diaz', 'carla@example.com', '{support}', now(), null),
      ('pe_ana234567892', ${idp.issuer}, 'ana', 'Ana Berg', 'ana@example.com', '{finance}', now(), null),
      ('pe_dora23456789', ${idp.issuer}, 'dora', 'Dora Lind', 'dora@example.com', '{support}', now(), now())`;
  const meta = (await (await fetch(`${consoleUrl}/.well-known/oauth-authorization-server`)).json()) as {
    issuer: string;
    grant_types_supported: string[];
  };
  expect(meta.grant_types_supported).toContain(JWT_BEARER);
  issuer = meta.issuer;
  const registered = await fetch(`${consoleUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Enterprise agent',
      redirect_uris: ['http://127.0.0.1:9/callback'],
      token_endpoint_auth_method: 'none',
    }),
  });
  clientId = ((await registered.json()) as { client_id: string }).client_id;
}, 90_000);

afterAll(async () => {
  await Promise.all([customer?.stop(), consoleServer?.stop()]);
  await idp?.close();
  await db?.drop();
});

/** An ID-JAG as the IdP's token exchange issues it; `over` replaces claims, `typ` and the key. */
async function idJag(
  sub: string,
  over: { claims?: Record<string, unknown>; typ?: string; key?: CryptoKey; kid?: string } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: idp.issuer,
    sub,
    aud: issuer,
    iat: now,
    exp: now + 300,
    client_id: clientId,
    resource: customer.url.toString(),
    jti: randomUUID(),
    ...over.claims,
  })
    .setProtectedHeader({ alg: 'RS256', typ: over.typ ?? 'oauth-id-jag+jwt', kid: over.kid ?? 'idp-1' })
    .sign(over.key ?? idpKey);
}

function exchange(assertion: string, client = clientId): Promise<Response> {
  return fetch(`${issuer}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: JWT_BEARER, assertion, client_id: client }),
  });
}

/** The audit event of the last exchange of `assertion` (its hash is in every one). */
async function eventOf(assertion: string) {
  const sha = createHash('sha256').update(assertion).digest('hex');
  const [row] = await db.sql<{ outcome: string; summary: Record<string, unknown> }[]>`
    select outcome, result_summary as summary from audit_events
    where server = 'console' and method = 'oauth/token' and result_summary ->> 'assertion_sha256' = ${sha}
    order by seq desc limit 1`;
  return row;
}

it('an ID-JAG for a person whose group holds customer tokens gets a 15-minute token that answers an MCP call', async () => {
  const assertion = await idJag('carla');
  const res = await exchange(assertion);
  expect(res.status).toBe(200);
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 900 });
  expect(body.refresh_token).toBeUndefined();
  const client = await connectTestClient(customer.url, body.access_token as string);
  const { tools } = await client.listTools();
  expect(tools.map((t) => t.name)).toContain('get_account_balance');
  // The token names the person but no customer: the customer-bound tool says so instead of showing an account.
  const balance = await client.callTool({ name: 'get_account_balance', arguments: {} });
  expect(JSON.stringify(balance.content)).toContain('not bound to a customer');
  await client.close();
  const [token] = await db.sql<{ person_id: string; owner: string; server: string }[]>`
    select person_id, owner, server from bulkhead_tokens where created_by = ${`idjag:${clientId}`}`;
  expect(token).toEqual({ person_id: 'pe_carla2345678', owner: 'carla@example.com', server: 'customer' });
  expect(await eventOf(assertion)).toMatchObject({
    outcome: 'ok',
    summary: { person_id: 'pe_carla2345678', person_name: 'Carla Diaz', server: 'customer', sub: 'carla' },
  });
  // The same assertion again is a replay (its jti was redeemed), refused and audited.
  const again = await exchange(assertion);
  expect(again.status).toBe(400);
  expect(await again.json()).toMatchObject({ error: 'invalid_grant' });
  expect(await eventOf(assertion)).toMatchObject({
    outcome: 'bad_request',
    summary: { reason: 'assertion_replayed', person_id: 'pe_carla2345678' },
  });
});

it('refuses, with invalid_grant and an audit event, each assertion that must not open the customer server', async () => {
  const other = await generateKeyPair('RS256');
  const hour = Math.floor(Date.now() / 1000) - 3600;
  const cases: [string, Promise<string>, string | null][] = [
    ['no rights', idJag('ana'), 'pe_ana234567892'],
    ['deactivated person', idJag('dora'), 'pe_dora23456789'],
    ['unknown person', idJag('eve'), null],
    ['wrong audience', idJag('carla', { claims: { aud: 'https://elsewhere.example' } }), null],
    ['expired', idJag('carla', { claims: { iat: hour - 300, exp: hour } }), null],
    ['another key, same kid', idJag('carla', { key: other.privateKey }), null],
    ['another key', idJag('carla', { key: other.privateKey, kid: 'other' }), null],
    ['wrong typ', idJag('carla', { typ: 'JWT' }), null],
    ['another resource', idJag('carla', { claims: { resource: 'http://127.0.0.1:9/mcp' } }), null],
    ['another client', idJag('carla', { claims: { client_id: 'someone-else' } }), null],
  ];
  const reasons: Record<string, unknown> = {};
  for (const [name, pending, person] of cases) {
    const assertion = await pending;
    const res = await exchange(assertion);
    expect([name, res.status]).toEqual([name, 400]);
    expect([name, await res.json()]).toMatchObject([name, { error: 'invalid_grant' }]);
    const event = await eventOf(assertion);
    expect([name, event?.outcome, event?.summary.person_id]).toEqual([name, 'bad_request', person]);
    reasons[name] = event!.summary.reason;
  }
  expect(reasons).toEqual({
    'no rights': 'no_rights',
    'deactivated person': 'person_deactivated',
    'unknown person': 'person_unknown',
    'wrong audience': 'audience_mismatch',
    expired: 'assertion_expired',
    'another key, same kid': 'signature_invalid',
    'another key': 'signature_invalid',
    'wrong typ': 'typ_mismatch',
    'another resource': 'resource_unknown',
    'another client': 'client_mismatch',
  });
  const [issued] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from bulkhead_tokens where created_by like 'idjag:%'`;
  expect(issued?.n).toBe(1);
});

it('refuses an unregistered client as invalid_client', async () => {
  const res = await exchange(await idJag('carla', { claims: { client_id: 'c_nobody' } }), 'c_nobody');
  expect(res.status).toBe(401);
  expect(await res.json()).toMatchObject({ error: 'invalid_client' });
});

it("the console's own login gets no token beyond the person's groups, nor one for a replayed jti, signed or not", async () => {
  const console = (await db.as('console')).sql;
  const unsigned = (claims: Record<string, unknown>) => {
    const part = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    return `${part({ alg: 'none', typ: 'oauth-id-jag+jwt' })}.${part({
      iss: idp.issuer,
      aud: issuer,
      client_id: clientId,
      iat: now,
      exp: now + 300,
      jti: randomUUID(),
      ...claims,
    })}.x`;
  };
  const redeem = async (assertion: string, id: string) => {
    const [row] = await console<{ refused: string | null; token_id: string | null }[]>`
      select refused, token_id from bulkhead_oauth_idjag_token(${assertion}, ${idp.issuer}, ${issuer}, ${clientId},
        'customer', '{}', ${id}, ${Buffer.alloc(32, 7)}, 'forged', now() + interval '10 minutes')`;
    return row;
  };
  // The database cannot check the JWS (documented): within the person's rights a forgery gets through,
  // and leaves its hash. Beyond them, or presented again, it does not.
  const forged = unsigned({ sub: 'carla' });
  expect(await redeem(forged, 'forgedtoken2')).toEqual({ refused: null, token_id: 'forgedtoken2' });
  expect(await redeem(forged, 'forgedtoken3')).toEqual({ refused: 'assertion_replayed', token_id: null });
  expect(await redeem(unsigned({ sub: 'ana' }), 'forgedtoken4')).toEqual({
    refused: 'no_rights',
    token_id: null,
  });
  expect(
    await redeem(unsigned({ sub: 'carla', aud: 'https://elsewhere.example' }), 'forgedtoken5'),
  ).toMatchObject({
    refused: 'audience_mismatch',
  });
  expect(await redeem(unsigned({ sub: 'carla', exp: 1_000_000 }), 'forgedtoken6')).toMatchObject({
    refused: 'assertion_expired',
  });
  const [use] = await db.sql<{ hash: string }[]>`
    select encode(assertion_hash, 'hex') as hash from bulkhead_idjag_uses where token_id = 'forgedtoken2'`;
  expect(use?.hash).toBe(createHash('sha256').update(forged).digest('hex'));
  await expect(
    console`insert into bulkhead_idjag_uses (issuer, jti, person_id, client_id, server, assertion_hash, token_id, expires_at)
      values ('x', 'y', 'pe_carla2345678', 'c', 'customer', '\\x00', 't', now())`,
  ).rejects.toMatchObject({ code: '42501' });
});
