import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createAuditWriter } from '@bulkhead/audit';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../index.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

// Each tool's time limit must reach the database, and a withdrawn call must stop its query:
// these tools sleep in Postgres, where only the database can stop them. The slow calls sleep ten
// minutes, far past the test's time limit: a query the server only abandoned would still be
// sleeping, so waiting for none to be left would time the test out.
const LIMIT_MS = 500;
const FOREVER_S = 600;
/** How long the change holding the one connection sleeps: ten times the limit of the calls that wait for it. */
const HOLD_S = (10 * LIMIT_MS) / 1000;
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
      input: z.object({ seconds: z.number().min(0).max(3600) }),
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
      input: z.object({ seconds: z.number().min(0).max(3600) }),
      output: z.object({ slept: z.number() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      timeoutMs: 15_000,
      handler: async ({ seconds }, ctx) => {
        await ctx.sql`select pg_sleep(${seconds})`;
        return { slept: seconds };
      },
    }),
    defineTool({
      name: 'show_statement_timeout',
      title: 'Show the statement timeout',
      description: 'Returns the statement timeout the call runs under.',
      scope: 'sleep:read',
      input: z.object({}),
      output: z.object({ statement_timeout: z.string() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      timeoutMs: LIMIT_MS,
      handler: async (_args, ctx) => {
        const [row] = await ctx.sql<{ statement_timeout: string }[]>`
          select current_setting('statement_timeout') as statement_timeout`;
        return row!;
      },
    }),
    defineTool({
      name: 'sleep_then_change',
      title: 'Sleep, then change',
      description: 'Sleeps in Postgres inside its transaction, as a tool that changes something.',
      scope: 'sleep:write',
      input: z.object({ seconds: z.number().min(0).max(3600) }),
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
      input: z.object({ seconds: z.number().min(0).max(3600) }),
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

/**
 * Resolves once no sleeping query is left (polled every 20 ms). The slow calls sleep for
 * {@link FOREVER_S}: only a stopped query ends in the test's lifetime, so a query left running
 * makes the test time out instead of passing.
 */
async function untilNoSleepers(): Promise<void> {
  while ((await sleepers()) > 0) await new Promise((r) => setTimeout(r, 20));
}

async function eventsOf(requestId: string) {
  return db.sql<{ outcome: string; result_summary: { error?: string } | null }[]>`
    select outcome, result_summary from audit_events where request_id = ${requestId}`;
}

/** Reads until `ok` holds (no deadline of its own: a state never reached times the test out). */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
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
  it('runs the call under its limit as statement_timeout, stops the slow query at it and returns its connection', async () => {
    const client = await connectTestClient(server.url, token);
    // The limit reaches the database as the statement's own timeout, so the database stops the query.
    const setting = await client.callTool({ name: 'show_statement_timeout', arguments: {} });
    expect(setting.structuredContent).toEqual({ statement_timeout: `${LIMIT_MS}ms` });
    // A call of ten minutes answers (far sooner: the test would time out), saying it was stopped.
    const result = await client.callTool({ name: 'sleep_in_database', arguments: { seconds: FOREVER_S } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(
      /did not finish within 0\.5 s and was stopped/,
    );
    // The query is gone from the database, not merely abandoned by the server.
    await untilNoSleepers();
    // And the pool has the connection back: the next call runs.
    const quick = await client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } });
    expect(quick.isError).toBeFalsy();
    await client.close();
  });

  it('keeps every connection of the pool usable after more timed-out calls than the pool holds', async () => {
    const client = await connectTestClient(server.url, token);
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        client.callTool({ name: 'sleep_in_database', arguments: { seconds: FOREVER_S } }),
      ),
    );
    expect(results.every((r) => r.isError === true)).toBe(true);
    await untilNoSleepers();
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
      body: callBody(1, FOREVER_S),
      signal: abort.signal,
    }).catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    expect(await sleepers()).toBe(1);
    abort.abort();
    await sent;
    await untilNoSleepers();
    const events = await eventually(
      () => eventsOf('cancel-by-disconnect'),
      (e) => e.length > 0,
    );
    expect(events.map((e) => e.outcome)).toEqual(['cancelled']);
  });

  it('a 2026-07-28 client giving up on a call (AbortSignal) cancels it', async () => {
    const client = await connectTestClient(server.url, token);
    const abort = new AbortController();
    const call = client
      .callTool(
        { name: 'sleep_long_in_database', arguments: { seconds: FOREVER_S } },
        { signal: abort.signal },
      )
      .catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    abort.abort('the user pressed stop');
    expect(await call).toBeInstanceOf(Error);
    await untilNoSleepers();
    await client.close();
  });

  it('notifications/cancelled from a 2025-11-25 client stops the call it names, and only for its own token', async () => {
    const call = fetch(server.url, {
      method: 'POST',
      headers: legacyHeaders('cancel-by-notification'),
      body: callBody('call-7', FOREVER_S),
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
    await untilNoSleepers();
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
      .callTool({ name: 'sleep_long_in_database', arguments: { seconds: FOREVER_S } }, undefined, {
        signal: abort.signal,
      })
      .catch((err: unknown) => err);
    await eventually(sleepers, (n) => n > 0);
    abort.abort('stop');
    expect(await call).toBeInstanceOf(Error);
    await untilNoSleepers();
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
      // Token check, call transaction, audit batch and rate-limit exchange all share the one connection.
      const results = await Promise.all(
        Array.from({ length: 20 }, () =>
          client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } }),
        ),
      );
      // Had one waited for another, they would have hung until their time limit and answered errors.
      expect(results.filter((r) => r.isError)).toEqual([]);
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
      // The one connection is held by a change that sleeps ten times the others' limit.
      let holderAnswered = false;
      const holder = client
        .callTool({ name: 'sleep_long_then_change', arguments: { seconds: HOLD_S } })
        .finally(() => {
          holderAnswered = true;
        });
      await eventually(sleepers, (n) => n > 0);
      const begun = changesBegun;
      const [change, read] = await Promise.all([
        client.callTool({ name: 'sleep_then_change', arguments: { seconds: 0 } }),
        client.callTool({ name: 'sleep_in_database', arguments: { seconds: 0 } }),
      ]);
      // Both waited for the connection and were answered at their limit, saying to try again, while
      // the connection was still held: they did not wait for it to come free (an order of events, not a
      // duration: the holder sleeps ten times their limit).
      expect(holderAnswered).toBe(false);
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
