import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { revokeToken } from '../../tokens.ts';
import {
  addNumbersServer,
  issueTestToken,
  postMcp,
  startTestServer,
  type TestServer,
} from '../../../testing/index.ts';

// The bearer token guard: a token refused for whatever reason is a 401 whose challenge names the
// protected-resource metadata, and a credential in the URL is refused on its own account.

const def = addNumbersServer('bearer-test', 'A server for the bearer token guard.');

let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db, authorizationServer: 'http://127.0.0.1:9/console' });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

const post = (bearer: string, body: unknown, version?: string) => postMcp(server.url, bearer, body, version);
const call = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'add_numbers', arguments: { a: 1, b: 2 } },
});

it('refuses a credential in the URL, even beside a valid Authorization header', async () => {
  const token = await issueTestToken(db.sql, def);
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'https://mcp.example.com',
    allowedOrigins: ['https://inspector.example.com'],
  });
  // With a valid Authorization header too: a credential in the URL is refused on its own account.
  for (const q of [`access_token=${token}`, `Access-Token=x`, `bearer=x`, `key=x`, `q=${token}`]) {
    const res = await app.request(`http://127.0.0.1/mcp?${q}`, {
      method: 'POST',
      headers: { host: '127.0.0.1', 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: '{}',
    });
    expect({ q, status: res.status }).toEqual({ q, status: 401 });
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
  }
  const reasons =
    await db.sql`select result_summary->>'reason' as reason from audit_events where result_summary->>'reason' = 'token_in_query'`;
  expect(reasons).toHaveLength(5);
  await close();
});

it('is 401 invalid_token with the protected-resource metadata, revoked, expired or another server’s; never 403', async () => {
  const revoked = await issueTestToken(db.sql, def, { label: 'revoked' });
  await revokeToken(db.sql, revoked.split('_')[2]!);
  const expired = await issueTestToken(db.sql, def, {
    label: 'expired',
    expiresAt: new Date(Date.now() - 1000),
  });
  const elsewhere = await issueTestToken(db.sql, { ...def, name: 'bearer-other' }, { label: 'elsewhere' });
  // The public URL of a test server is http://127.0.0.1 (startTestServer).
  const metadata = 'http://127.0.0.1/.well-known/oauth-protected-resource/mcp';
  for (const bearer of [revoked, expired, elsewhere]) {
    const res = await post(bearer, call(1), '2025-11-25');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer realm="bearer-test", resource_metadata="${metadata}", error="invalid_token", error_description="The access token is unknown, expired, revoked or issued for another server; a new one is issued with bulkhead tokens issue"`,
    );
    expect(await res.json()).toEqual({
      error: 'invalid_token',
      error_description:
        'The access token is unknown, expired, revoked or issued for another server; a new one is issued with bulkhead tokens issue.',
    });
  }
});

it('answers 503 when the token check stalls (its row locked), rather than hold the request', async () => {
  const token = await issueTestToken(db.sql, def);
  const id = token.split('_')[2]!;
  // Never used: the check notes the first use, and waits for the lock a revocation in progress holds.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = db.sql.begin(async (tx) => {
    await tx`select id from bulkhead_tokens where id = ${id} for update`;
    locked();
    await held;
  });
  await isLocked;
  // The lock is released only after the answer: an answer at all shows the check was given up on.
  const res = await post(token, call(9));
  release();
  await holder;
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe('5');
  expect(await res.text()).toContain('The database is unreachable');
  // Once the lock is gone the same token works.
  expect((await post(token, call(10))).status).toBe(200);
}, 20_000);
