import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer, issueTestToken, mcpSender } from '../../../testing/index.ts';

// The MCP adapter hands a request past every guard to the MCP layer; what that layer turns away itself
// (a DELETE without sessions, a wrong Accept header) is a refusal too, and gets its event here.

const def = addNumbersServer('mcp-adapter-test', 'A server for the MCP adapter.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

it('answers and audits a DELETE, which the MCP layer refuses (there is no session to end)', async () => {
  const { app, close } = createHttpApp(def, {
    sql: db.sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
  });
  const own = await issueTestToken(db.sql, def, { label: 'malformed sender' });
  const send = mcpSender(app, own);
  expect((await send('DELETE')).status).toBe(405);
  await close();
  const rows = await db.sql<{ outcome: string; reason: string; status: number }[]>`
    select outcome, result_summary->>'reason' as reason, (result_summary->>'status')::int as status
    from audit_events where token_label = 'malformed sender' order by seq`;
  expect(rows).toEqual([{ outcome: 'bad_request', reason: 'mcp', status: 405 }]);
});
