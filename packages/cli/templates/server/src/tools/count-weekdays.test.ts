import type { Client } from '@modelcontextprotocol/client';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { __TOKEN_OPTIONS__ } from '../stand-ins.ts';
import { __SERVER__ } from '../server.ts';

let db: TestDatabase;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  db = await createTestDatabase();
  // Served over real HTTP under the server's own database role, called by a real MCP client.
  server = await startTestServer(__SERVER__, { db });
  client = await connectTestClient(server.url, await issueTestToken(db.sql, __SERVER__, __TOKEN_OPTIONS__));
});
afterAll(async () => {
  await client.close();
  await server.close();
  await db.drop();
});

describe('count_weekdays', () => {
  it('counts the days and the weekdays, both ends included', async () => {
    const result = await callFlat(client, 'count_weekdays', { from: '2026-03-02', to: '2026-03-15' });
    expect([result.isError, result.structured]).toEqual([
      false,
      { from: '2026-03-02', to: '2026-03-15', days: 14, weekdays: 10 },
    ]);
    const one = await callFlat(client, 'count_weekdays', { from: '2026-03-07', to: '2026-03-07' });
    expect(one.structured).toEqual({ from: '2026-03-07', to: '2026-03-07', days: 1, weekdays: 0 });
  });

  it('says what to fix when the range is backwards or too long', async () => {
    expect(await callFlat(client, 'count_weekdays', { from: '2026-03-15', to: '2026-03-02' })).toEqual({
      isError: true,
      text: 'to (2026-03-02) is before from (2026-03-15) — give the earlier date as from',
      structured: undefined,
    });
    expect(await callFlat(client, 'count_weekdays', { from: '2000-01-01', to: '2026-01-01' })).toEqual({
      isError: true,
      text: 'from 2000-01-01 to 2026-01-01 is more than 3660 days — count a shorter range',
      structured: undefined,
    });
  });

  it('refuses a date that is not one, naming the argument', async () => {
    expect(await callFlat(client, 'count_weekdays', { from: '2026-02-30', to: '2026-03-02' })).toEqual({
      isError: true,
      text:
        'Invalid arguments — from: got "2026-02-30", expected a date written YYYY-MM-DD. ' +
        'Nothing was done; call again with corrected arguments.',
      structured: undefined,
    });
  });

  it('is audited: each call is one event with its tool, arguments and outcome', async () => {
    const events = await db.sql`
      select tool, arguments, outcome from audit_events where server = ${__SERVER__.name} order by seq`;
    expect(events).toEqual([
      { tool: 'count_weekdays', arguments: { from: '2026-03-02', to: '2026-03-15' }, outcome: 'ok' },
      { tool: 'count_weekdays', arguments: { from: '2026-03-07', to: '2026-03-07' }, outcome: 'ok' },
      { tool: 'count_weekdays', arguments: { from: '2026-03-15', to: '2026-03-02' }, outcome: 'tool_error' },
      { tool: 'count_weekdays', arguments: { from: '2000-01-01', to: '2026-01-01' }, outcome: 'tool_error' },
      {
        tool: 'count_weekdays',
        arguments: { from: '2026-02-30', to: '2026-03-02' },
        outcome: 'invalid_arguments',
      },
    ]);
  });
});
