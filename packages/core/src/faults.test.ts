import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createAuditWriter } from '@bulkhead/audit';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from './index.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from './testing.ts';

// Each tool's time limit must reach the database, and a withdrawn call must stop its query:
// these tools sleep in Postgres, where only the database can stop them.
const LIMIT_MS = 500;
/** Calls of `sleep_then_change` whose handler began. */
let changesBegun = 0;
const def = createServer({
  name: 'faults-test',
  version: '1.0.0',
  description: 'A server whose tools sleep in the database.',
  tools: [
    defineTool({
      name: 'sleep_in_database',
      title: 'Sleep in the database',
      description: 'Sleeps in Postgres for the given seconds.',
      scope: 'sleep:read',
      input: z.object({ seconds: z.number().min(0).max(30) }),
      output: z.object({ slept: z.number() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      timeoutMs: LIMIT_MS,
      handler: async ({ seconds }, ctx) => {
        await ctx.sql`select pg_sleep(${seconds})`;
        return { slept: seconds };
      },
    }),
    defineTool({
      name: 'sleep_long_in_database',
      title: 'Sleep long in the database',
      description: 'Sleeps in Postgres for the given seconds, with a long time limit.',
      scope: 'sleep:read',
      input: z.object({ seconds: z.number().min(0).max(30) }),
      output: z.object({ slept: z.number() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      timeoutMs: 15_000,
      handler: async ({ seconds }, ctx) => {
        await ctx.sql`select pg_sleep(${seconds})`;
        return { slept: seconds };
      },
    }),
    defineTool({
      name: 'sleep_then_change',
      title: 'Sleep, then change',
      description: 'Sleeps in Postgres inside its transaction, as a tool that changes something.',
      scope: 'sleep:write',
      input: z.object({ seconds: z.number().min(0).max(30) }),
      output: z.object({ slept: z.number() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      timeoutMs: LIMIT_MS,
      handler: async ({ seconds }, ctx) => {
        changesBegun++;
        await ctx.sql`select pg_sleep(${seconds})`;
        return { slept: seconds };
      },
    }),
    defineTool({
      name: 'sleep_long_then_change',
      title: 'Sleep long, then change',
      description: 'Sleeps in Postgres inside its transaction, with a long time limit.',
      scope: 'sleep:write',
      input: z.object({ seconds: z.number().min(0).max(30) }),
      output: z.object({ slept: z.number() }),
      annotations: {
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      },
      timeoutMs: 15_000,
      handler: async ({ seconds }, ctx) => {
        await ctx.sql`select pg_sleep(${seconds})`;
        return { slept: seconds };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db });
  token = await issueTestToken(db.sql, def);
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

/**
 * Sleeping queries of this test's database still running, as the database sees them: asked as the
 * superuser, since the schema owner (no superuser) sees no other role's query or state.
 */
async function sleepers(): Promise<number> {
  const [row] = await db.admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and state = 'active' and query like '%pg_sleep%'
      and pid <> pg_backend_pid()`;
  return row!.n;
}

/** Milliseconds until no sleeping query is left (polled every 20 ms, up to `max`). */
async function untilNoSleepers(max = 10_000): Promise<number> {
  const started = Date.now();
  while ((await sleepers()) > 0) {
    if (Date.now() - started > max) throw new Error(`a sleeping query still runs after ${max} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - started;
}

async function eventsOf(requestId: string) {
  return db.sql<{ outcome: string; result_summary: { error?: string } | null }[]>`
    select outcome, result_summary from audit_events where request_id = ${requestId}`;
}

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, max = 5000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() - started > max) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

function callBody(id: string | number, seconds: number) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'sleep_long_in_database', arguments: { seconds } },
  });
}

const legacyHeaders = (requestId: string) => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-11-25',
  'x-request-id': requestId,
});

describe('a tool time limit reaches the database', () => {
  it('stops the slow query at the limit and returns its connection within 1 s', async () => {
    const client = await connectTestClient(server.url, token);
    const started = Date.now();
    const result = await client.callTool({ name: 'sleep_in_database', arguments: { seconds: 20 } });
    const answered = Date.now() - started;
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(
      /did not finish within 0\.5 s and was stopped/,
    );
    expect(answered).toBeLessThan(LIMIT_MS + 1000);
    // The query is gone from the database, not merely abandoned by the server.
    const afterAnswer = await untilNoSleepers();
    expect(answered + afterAnswer - LIMIT_MS).toBeLessThan(1000);
    // And the pool has the connection back: the next call runs at once.
    const next = Date.now();
    const quick = await client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } });
    expect(quick.isError).toBeFalsy();
    expect(Date.now() - next).toBeLessThan(1000);
    await client.close();
  });

  it('keeps every connection of the pool usable after more timed-out calls than the pool holds', async () => {
    const client = await connectTestClient(server.url, token);
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.callTool({ name: 'sleep_in_database', arguments: { seconds: 20 } }),
      ),
    );
    expect(results.every((r) => r.isError === true)).toBe(true);
    expect(await untilNoSleepers()).toBeLessThan(2000);
    const after = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } }),
      ),
    );
    expect(after.every((r) => !r.isError)).toBe(true);
    await client.close();
  });
});

describe('cancellation stops the handler and its query', () => {
  it('a client closing its HTTP connection cancels the call; audited as cancelled', async () => {
    const abort = new AbortController();
    const sent = fetch(server.url, {
      method: 'POST',
      headers: legacyHeaders('cancel-by-disconnect'),
      body: callBody(1, 20),
      signal: abort.signal,
    }).catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    expect(await sleepers()).toBe(1);
    const closed = Date.now();
    abort.abort();
    await sent;
    expect(await untilNoSleepers()).toBeLessThan(1000);
    const events = await eventually(
      () => eventsOf('cancel-by-disconnect'),
      (e) => e.length > 0,
    );
    expect(events.map((e) => e.outcome)).toEqual(['cancelled']);
    expect(Date.now() - closed).toBeLessThan(5000);
  });

  it('a 2026-07-28 client giving up on a call (AbortSignal) cancels it', async () => {
    const client = await connectTestClient(server.url, token);
    const abort = new AbortController();
    const call = client
      .callTool({ name: 'sleep_long_in_database', arguments: { seconds: 20 } }, { signal: abort.signal })
      .catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    abort.abort('the user pressed stop');
    expect(await call).toBeInstanceOf(Error);
    expect(await untilNoSleepers()).toBeLessThan(1000);
    await client.close();
  });

  it('notifications/cancelled from a 2025-11-25 client stops the call it names, and only for its own token', async () => {
    const call = fetch(server.url, {
      method: 'POST',
      headers: legacyHeaders('cancel-by-notification'),
      body: callBody('call-7', 20),
    });
    await eventually(sleepers, (n) => n > 0);
    // Another token naming the same request id cancels nothing.
    const other = await issueTestToken(db.sql, def, { label: 'someone else' });
    const foreign = await fetch(server.url, {
      method: 'POST',
      headers: { ...legacyHeaders('foreign-cancel'), authorization: `Bearer ${other}` },
      body: JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'call-7', reason: 'not mine' },
      }),
    });
    expect(foreign.status).toBe(202);
    await new Promise((r) => setTimeout(r, 100));
    expect(await sleepers()).toBe(1);
    const cancel = await fetch(server.url, {
      method: 'POST',
      headers: legacyHeaders('the-cancel'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 'call-7', reason: 'the user pressed stop' },
      }),
    });
    expect(cancel.status).toBe(202);
    expect(await untilNoSleepers()).toBeLessThan(1000);
    const response = await call;
    expect(response.status).toBe(200);
    const events = await eventually(
      () => eventsOf('cancel-by-notification'),
      (e) => e.length > 0,
    );
    expect(events.map((e) => e.outcome)).toEqual(['cancelled']);
  });

  it('the SDK 1.x client (2025-11-25, sessionless) cancelling with an AbortSignal stops the query', async () => {
    const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
    await client.connect(
      new LegacyTransport(server.url, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    );
    const abort = new AbortController();
    const call = client
      .callTool({ name: 'sleep_long_in_database', arguments: { seconds: 20 } }, undefined, {
        signal: abort.signal,
      })
      .catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    abort.abort('stop');
    expect(await call).toBeInstanceOf(Error);
    expect(await untilNoSleepers()).toBeLessThan(1000);
    await client.close();
  });
});

describe('the pool', () => {
  it('serves with a single connection: no request holds one while it waits for another', async () => {
    const { url } = await db.as(def.name);
    const one = createSql(url, { max: 1 });
    const single = await startTestServer(def, { db, sql: one });
    try {
      const client = await connectTestClient(single.url, token);
      const started = Date.now();
      // Token check, call transaction, audit batch and rate-limit exchange all share the one connection.
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } }),
        ),
      );
      expect(results.filter((r) => r.isError)).toEqual([]);
      expect(Date.now() - started).toBeLessThan(5000);
      await client.close();
    } finally {
      await single.close();
      await one.end();
    }
  });

  it('answers a call that waits for a connection past its time limit, and runs none of it later', async () => {
    const own = await db.as(def.name);
    const one = createSql(own.url, { max: 1 });
    // Calls wait for the one connection; their events go through another pool, or the answers would wait too.
    const single = await startTestServer(def, {
      db,
      sql: one,
      audit: createAuditWriter(own.sql),
      rateLimitPerMinute: 0,
    });
    try {
      const client = await connectTestClient(single.url, token);
      // The one connection is held by a change that takes 2 s.
      const holder = client.callTool({ name: 'sleep_long_then_change', arguments: { seconds: 2 } });
      await eventually(sleepers, (n) => n > 0);
      const begun = changesBegun;
      const started = Date.now();
      const [change, read] = await Promise.all([
        client.callTool({ name: 'sleep_then_change', arguments: { seconds: 0 } }),
        client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } }),
      ]);
      // Both waited for the connection: each answered at its limit (0.5 s), saying to try again.
      expect(Date.now() - started).toBeLessThan(LIMIT_MS + 1000);
      for (const result of [change, read]) {
        expect(result.isError).toBe(true);
        expect(JSON.stringify(result.content)).toContain('could not reach the database');
      }
      expect((await holder).isError).toBeFalsy();
      // The change given up on never ran once the connection came free, and the connection serves on.
      const after = await client.callTool({ name: 'sleep_then_change', arguments: { seconds: 0 } });
      expect(after.isError).toBeFalsy();
      expect(changesBegun).toBe(begun + 1);
      await client.close();
    } finally {
      await single.close();
      await one.end();
    }
  });
});
