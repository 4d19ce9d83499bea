import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer } from '../../../testing/index.ts';

// The request's context, opened before any guard: its id, returned in the answer and kept in its event.

const def = addNumbersServer('request-context-test', 'A server for the request context.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

it("keeps a sane X-Request-Id, replaces any other with a fresh one, and names it in the request's event", async () => {
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
  });
  // No token: each request is refused 401 by the token check, and audited under its id.
  const post = (requestId?: string) =>
    app.request('http://127.0.0.1/mcp', {
      method: 'POST',
      headers: {
        host: '127.0.0.1',
        'content-type': 'application/json',
        ...(requestId === undefined ? {} : { 'x-request-id': requestId }),
      },
      body: '{}',
    });
  const sane = await post('client-42.a/b');
  expect(sane.headers.get('x-request-id')).toBe('client-42.a/b');
  const ids = [
    (await post()).headers.get('x-request-id')!,
    (await post('has a space')).headers.get('x-request-id')!,
    (await post('x'.repeat(101))).headers.get('x-request-id')!,
  ];
  expect(ids.map((id) => UUID.test(id))).toEqual([true, true, true]);
  expect(new Set(ids).size).toBe(3);
  await close();
  const events = await db.sql<{ request_id: string }[]>`
    select request_id from audit_events where server = ${def.name} order by seq`;
  expect(events.map((e) => e.request_id)).toEqual(['client-42.a/b', ...ids]);
});
