import { createAuditWriter } from '@bulkhead/audit';
import { createLogger } from '@bulkhead/core';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsoleApp, type ConsoleApp } from '../app.tsx';
import type { ConsoleEnv } from '../context.ts';
import { signedIn } from '../fixtures/people.ts';
import { requestAudit } from './request-audit.ts';

const ORIGIN = 'http://127.0.0.1:3100';
const BROWSER = 'Mozilla/5.0 (request-audit test)';

let db: TestDatabase;
let consoleSql: Sql;
let consoleApp: ConsoleApp;

beforeAll(async () => {
  db = await createTestDatabase();
  consoleSql = (await db.as('console')).sql;
  consoleApp = createConsoleApp({
    sql: consoleSql,
    logger: createLogger({ level: 'silent' }),
    publicUrl: ORIGIN,
  });
});

afterAll(async () => {
  await consoleApp?.close();
  await db?.drop();
});

/** The events stored under `requestId`, in log order. */
function eventsOf(requestId: string) {
  return db.sql<
    { server: string; method: string; tool: string | null; tokenId: string | null; clientName: string }[]
  >`
    select server, method, tool, token_id as "tokenId", client_name as "clientName"
    from audit_events where request_id = ${requestId} order by seq`;
}

describe('a console request’s audit owner', () => {
  it('gives every event one request writes that request’s id, and the next request another', async () => {
    const app = new Hono<ConsoleEnv>();
    app.use(requestAudit(createAuditWriter(consoleSql)));
    app.post('/two', async (c) => {
      const audit = c.get('audit');
      await audit.append({
        method: 'console/sign-in',
        outcome: 'unauthorized',
        resultSummary: { reason: 'unknown' },
      });
      await audit.append({ method: 'console/operator', tool: 'page', outcome: 'forbidden' });
      return c.text(audit.requestId);
    });
    const ask = () => app.request('/two', { method: 'POST', headers: { 'user-agent': BROWSER } });

    const first = await ask();
    const second = await ask();
    const [one, two] = [await first.text(), await second.text()];
    expect(first.headers.get('x-request-id')).toBe(one);
    expect(two).not.toBe(one);
    const stored = await eventsOf(one);
    expect(stored).toEqual([
      { server: 'console', method: 'console/sign-in', tool: null, tokenId: null, clientName: BROWSER },
      { server: 'console', method: 'console/operator', tool: 'page', tokenId: null, clientName: BROWSER },
    ]);
    expect((await eventsOf(two)).map((e) => e.method)).toEqual(['console/sign-in', 'console/operator']);
  });

  it('is what the console’s own events are written through: the refused operator page names the approver', async () => {
    const bo = await signedIn(db, consoleSql, 'bo@example.test', ['approvals:decide']);
    const refused = await consoleApp.app.request(`${ORIGIN}/operator/tokens`, {
      headers: { host: '127.0.0.1:3100', cookie: bo.cookie, 'user-agent': BROWSER },
    });
    expect(refused.status).toBe(403);
    const requestId = refused.headers.get('x-request-id')!;
    expect(await eventsOf(requestId)).toEqual([
      {
        server: 'console',
        method: 'console/operator',
        tool: 'page',
        tokenId: bo.tokenId,
        clientName: BROWSER,
      },
    ]);
  });

  it('names the request of a cross-origin form it refused', async () => {
    const refused = await consoleApp.app.request(`${ORIGIN}/logout`, {
      method: 'POST',
      headers: { host: '127.0.0.1:3100', origin: 'https://elsewhere.example', 'user-agent': BROWSER },
    });
    expect(refused.status).toBe(403);
    expect(await eventsOf(refused.headers.get('x-request-id')!)).toEqual([
      { server: 'console', method: 'console/logout', tool: null, tokenId: null, clientName: BROWSER },
    ]);
  });
});
