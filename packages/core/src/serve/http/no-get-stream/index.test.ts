import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer, issueTestToken, startTestServer } from '../../../testing/index.ts';

// `GET /mcp` asks for a standing event stream, which these stateless servers do not offer: every answer
// is 405 with `Allow`, and no audit event — the first GET of every 2025-era client is housekeeping,
// not a refusal (issue 44: it made 17 of 24 "refusals" on the charts page after one sitting).

const def = addNumbersServer('get-stream-test', 'A server that offers no event stream on GET.');

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** The events a token's requests left, oldest first. */
function eventsOf(label: string) {
  return db.sql<{ method: string; tool: string | null; outcome: string }[]>`
    select method, tool, outcome from audit_events where token_label = ${label} order by seq`;
}

/** A fetch that records the method and answer of every request a client sends. */
function recording() {
  const sent: { method: string; status: number; allow: string | null }[] = [];
  let sawGet: () => void;
  const gotGet = new Promise<void>((resolve) => (sawGet = resolve));
  const fetchFn = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetch(input, init);
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    sent.push({ method, status: res.status, allow: res.headers.get('allow') });
    if (method === 'GET') sawGet();
    return res;
  };
  return { sent, gotGet, fetch: fetchFn };
}

describe('a real MCP client connecting', () => {
  const clients = [
    {
      name: 'the SDK 2.x client (2025-11-25 handshake, its default)',
      sendsGet: true,
      connect: async (url: URL, token: string, fetchFn: typeof fetch) => {
        const client = new Client({ name: 'get-stream-test', version: '2.4.0' });
        await client.connect(
          new StreamableHTTPClientTransport(url, {
            requestInit: { headers: { Authorization: `Bearer ${token}` } },
            fetch: fetchFn,
          }),
        );
        return client;
      },
    },
    {
      name: 'the SDK 1.x client (2025-11-25)',
      sendsGet: true,
      connect: async (url: URL, token: string, fetchFn: typeof fetch) => {
        const client = new LegacyClient({ name: 'get-stream-test', version: '1.32.2' });
        await client.connect(
          new LegacyTransport(url, {
            requestInit: { headers: { Authorization: `Bearer ${token}` } },
            fetch: fetchFn,
          }),
        );
        return client;
      },
    },
    {
      name: 'the SDK 2.x client pinned to 2026-07-28 (no GET: it listens by POST)',
      sendsGet: false,
      connect: async (url: URL, token: string, fetchFn: typeof fetch) => {
        const client = new Client(
          { name: 'get-stream-test', version: '2.4.0' },
          { versionNegotiation: { mode: { pin: '2026-07-28' } } },
        );
        await client.connect(
          new StreamableHTTPClientTransport(url, {
            requestInit: { headers: { Authorization: `Bearer ${token}` } },
            fetch: fetchFn,
          }),
        );
        return client;
      },
    },
  ];

  for (const { name, sendsGet, connect } of clients)
    it(`${name}: a GET is answered 405 and the sitting leaves only its call's event`, async () => {
      const server = await startTestServer(def, { db });
      const label = `client ${name}`;
      const token = await issueTestToken(db.sql, def, { label });
      const wire = recording();
      const client = await connect(server.url, token, wire.fetch as typeof fetch);
      if (sendsGet) await wire.gotGet;
      const result = await client.callTool({ name: 'add_numbers', arguments: { a: 2, b: 3 } });
      expect(result.structuredContent).toEqual({ sum: 5 });
      await client.close();
      await server.close();
      const gets = wire.sent.filter((s) => s.method === 'GET');
      expect(gets).toEqual(sendsGet ? [{ method: 'GET', status: 405, allow: 'POST, OPTIONS' }] : []);
      expect(await eventsOf(label)).toEqual([{ method: 'tools/call', tool: 'add_numbers', outcome: 'ok' }]);
    });
});

describe('a raw GET /mcp', () => {
  it('is 405 with Allow on both revisions, with a token or without, whatever it accepts; no event', async () => {
    const { app, close } = createHttpApp(def, {
      sql: db.sql,
      logger: pino({ level: 'silent' }),
      publicUrl: 'http://127.0.0.1',
      // Even the first unauthenticated request of a source would be audited on its own.
      unauthenticatedEventsPerMinute: 1_000,
    });
    const label = 'raw get';
    const token = await issueTestToken(db.sql, def, { label });
    const ids: string[] = [];
    for (const version of ['2025-11-25', '2026-07-28'])
      for (const authorization of [`Bearer ${token}`, undefined, 'Bearer bh_get-stream-test_unknown'])
        for (const accept of ['text/event-stream', 'application/json, text/event-stream', undefined]) {
          const res = await app.request('http://127.0.0.1/mcp', {
            method: 'GET',
            headers: {
              host: '127.0.0.1',
              'mcp-protocol-version': version,
              ...(authorization ? { authorization } : {}),
              ...(accept ? { accept } : {}),
            },
          });
          const asked = `${version} ${authorization ?? 'no token'} ${accept ?? 'no accept'}`;
          expect(res.status, asked).toBe(405);
          expect(res.headers.get('allow'), asked).toBe('POST, OPTIONS');
          expect(await res.json(), asked).toEqual({
            jsonrpc: '2.0',
            id: null,
            error: {
              code: -32000,
              message:
                'Method not allowed: this server offers no event stream on GET. Send JSON-RPC messages by POST; a 2026-07-28 client hears of tool changes by POSTing subscriptions/listen.',
            },
          });
          ids.push(res.headers.get('x-request-id')!);
        }
    await close();
    expect(new Set(ids).size).toBe(18);
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events
      where server = 'get-stream-test' and (request_id = any(${ids}) or method like 'http%')`;
    expect(row!.n).toBe(0);
  });

  it('from a foreign origin is still refused 403 and audited; a DELETE is still refused by the MCP layer', async () => {
    const { app, close } = createHttpApp(def, {
      sql: db.sql,
      logger: pino({ level: 'silent' }),
      publicUrl: 'http://127.0.0.1',
    });
    const token = await issueTestToken(db.sql, def, { label: 'not housekeeping' });
    const send = (method: string, extra: Record<string, string> = {}) =>
      app.request('http://127.0.0.1/mcp', {
        method,
        headers: {
          host: '127.0.0.1',
          authorization: `Bearer ${token}`,
          accept: 'text/event-stream',
          ...extra,
        },
      });
    const foreign = await send('GET', { origin: 'http://evil.example' });
    expect(foreign.status).toBe(403);
    const deleted = await send('DELETE', { 'mcp-protocol-version': '2025-11-25' });
    expect(deleted.status).toBe(405);
    await close();
    const ids = [foreign, deleted].map((r) => r.headers.get('x-request-id')!);
    const rows = await db.sql<{ method: string; outcome: string; reason: string; status: number }[]>`
      select method, outcome, result_summary->>'reason' as reason, (result_summary->>'status')::int as status
      from audit_events where request_id = any(${ids}) order by seq`;
    expect(rows).toEqual([
      { method: 'http GET', outcome: 'forbidden', reason: 'origin', status: 403 },
      { method: 'http DELETE', outcome: 'bad_request', reason: 'mcp', status: 405 },
    ]);
  });
});
