import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer } from '../../../testing/index.ts';

// A body declared larger than the limit is refused 413 before anything reads it, and before the token
// check: no one makes the server read a large body. (One that declares no length: json-body's tests.)

const def = addNumbersServer('body-size-test', 'A server for the body size guard.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** A POST to `app` that declares `length` bytes (its body is two). */
function declaring(
  app: { request: (url: string, init: RequestInit) => Response | Promise<Response> },
  length: number,
) {
  return app.request('http://127.0.0.1/mcp', {
    method: 'POST',
    headers: { host: '127.0.0.1', 'content-type': 'application/json', 'content-length': String(length) },
    body: '{}',
  });
}

it('refuses a body declared larger than the default 1 MiB', async () => {
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'https://mcp.example.com',
    allowedOrigins: ['https://inspector.example.com'],
  });
  const big = await declaring(app, 2 * 1024 * 1024);
  expect(big.status).toBe(413);
  await close();
});

it('lets a body declared at the limit pass on to the token check, and audits one past it', async () => {
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
    maxBodyBytes: 1024,
  });
  expect((await declaring(app, 1024)).status).toBe(401);
  const over = await declaring(app, 1025);
  expect(over.status).toBe(413);
  expect(await over.json()).toEqual({
    error: 'payload_too_large',
    error_description: 'Request bodies are limited to 1024 bytes.',
  });
  const rows = await db.sql<{ summary: Record<string, unknown> }[]>`
    select result_summary as summary from audit_events where outcome = 'payload_too_large' order by seq`;
  expect(rows.at(-1)).toEqual({ summary: { status: 413, reason: 'body', bytes: 1025 } });
  await close();
});
