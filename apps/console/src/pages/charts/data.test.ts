import { randomUUID } from 'node:crypto';
import { createAuditWriter } from '@bulkhead/audit';
import { createLogger } from '@bulkhead/core';
import { addNumbersServer, issueTestToken, startTestServer } from '@bulkhead/core/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { signedIn } from '../../fixtures/people.ts';
import { chartData } from './data.ts';

// The charts page's refusals count real refusals only: a client's GET for an event stream is
// housekeeping (issue 44: after one sitting it made 17 of 24 "refusals"). A real 2025-era client
// connects to a real server and makes one refused call; the events older servers wrote for that GET
// are in the log too, and neither is counted.

const def = addNumbersServer('charts-test', 'A server a client sits with.');

let db: TestDatabase;
let consoleSql: Sql;
let proof: string;

beforeAll(async () => {
  db = await createTestDatabase();
  consoleSql = (await db.as('console')).sql;
  proof = (await signedIn(db, consoleSql, 'olga@example.test', ['approvals:decide', 'tokens:manage'])).token;
});
afterAll(async () => {
  await db.drop();
});

it('counts a sitting’s refused call, not the client’s GET for an event stream, nor one an older server audited', async () => {
  const from = new Date(Date.now() - 60_000);
  const server = await startTestServer(def, { db, logger: createLogger({ level: 'silent' }) });
  const token = await issueTestToken(db.sql, def, { label: 'sitting' });
  const gets: number[] = [];
  let sawGet!: () => void;
  const gotGet = new Promise<void>((resolve) => (sawGet = resolve));
  // The SDK client's default handshake is 2025-11-25's, after which it asks for the event stream by GET.
  const client = new Client({ name: 'charts-test', version: '2.4.0' });
  await client.connect(
    new StreamableHTTPClientTransport(server.url, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if (init?.method === 'GET') {
          gets.push(res.status);
          sawGet();
        }
        return res;
      },
    }),
  );
  await gotGet;
  const ok = await client.callTool({ name: 'add_numbers', arguments: { a: 1, b: 2 } });
  expect(ok.isError).toBeFalsy();
  const invalid = await client.callTool({ name: 'add_numbers', arguments: { a: 'one', b: 2 } });
  expect(invalid.isError).toBe(true);
  await client.close();
  await server.close();
  expect(gets).toEqual([405]);
  // What a server before this change wrote for that GET, and for a GET past its token check.
  await createAuditWriter(db.sql).append({
    server: 'charts-test',
    method: 'http GET',
    tool: null,
    outcome: 'bad_request',
    requestId: randomUUID(),
    durationMs: 1,
    tokenLabel: 'sitting',
    resultSummary: { status: 405, reason: 'mcp' },
  });
  // A GET refused for a foreign origin is a refusal, GET or not.
  await createAuditWriter(db.sql).append({
    server: 'charts-test',
    method: 'http GET',
    tool: null,
    outcome: 'forbidden',
    requestId: randomUUID(),
    durationMs: 1,
    resultSummary: { status: 403, reason: 'origin' },
  });
  const data = await chartData(consoleSql, proof, {
    from,
    to: new Date(Date.now() + 60_000),
    bucket: 'hour',
  });
  expect(data.refusals).toEqual([
    { outcome: 'forbidden', reason: 'origin', events: 1 },
    { outcome: 'invalid_arguments', reason: null, events: 1 },
  ]);
  expect(data.tools).toEqual([{ server: 'charts-test', tool: 'add_numbers', calls: 2 }]);
});
