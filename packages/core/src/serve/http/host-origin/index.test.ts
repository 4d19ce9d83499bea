import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer } from '../../../testing/index.ts';

// The first guard after the request's context: a Host or Origin that is not allowed is refused 403 and
// audited, before any token is looked at (DNS rebinding, cross-site requests).

const def = addNumbersServer('host-origin-test', 'A server for the Host and Origin guard.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

it('refuses foreign Host and Origin headers (DNS rebinding) and accepts configured ones', async () => {
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'https://mcp.example.com',
    allowedOrigins: ['https://inspector.example.com'],
  });
  const post = (headers: Record<string, string>) =>
    app.request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{}',
    });
  expect((await post({ host: 'attacker.example' })).status).toBe(403);
  expect((await post({ host: '127.0.0.1:3103', origin: 'http://attacker.example' })).status).toBe(403);
  // Allowed host/origin pairs pass the guard and reach the token check.
  expect((await post({ host: '127.0.0.1:3103', origin: 'http://localhost:5173' })).status).toBe(401);
  expect((await post({ host: 'mcp.example.com', origin: 'https://mcp.example.com' })).status).toBe(401);
  expect((await post({ host: 'mcp.example.com', origin: 'https://inspector.example.com' })).status).toBe(401);
  const rows = await db.sql<{ reason: string }[]>`
    select result_summary->>'reason' as reason from audit_events where outcome = 'forbidden' order by seq`;
  expect(rows).toEqual([{ reason: 'host' }, { reason: 'origin' }]);
  await close();
});
