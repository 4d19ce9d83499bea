import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../index.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

// A read-only call runs outside any transaction, on a connection set to its customer and time limit: these tools show
// what the database sees during a call, and try to write where nothing may be written.
const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const def = createServer({
  name: 'read-test',
  version: '1.0.0',
  description: 'A server whose read-only tools look at their own connection.',
  tools: [
    defineTool({
      name: 'peek_settings',
      title: 'Peek at the settings',
      description: 'The settings the database applies to this call.',
      scope: 'peek:read',
      input: z.object({}),
      output: z.object({ customer: z.string(), timeout: z.string(), readOnly: z.string() }),
      annotations: ro,
      timeoutMs: 1_500,
      handler: async (_args, ctx) => {
        const [row] = await ctx.sql<{ customer: string; timeout: string; readOnly: string }[]>`
          select coalesce(current_setting('bulkhead.customer_id', true), '') as customer,
            current_setting('statement_timeout') as timeout,
            current_setting('transaction_read_only') as "readOnly"`;
        return row!;
      },
    }),
    defineTool({
      name: 'sneak_write',
      title: 'Sneak a write',
      description: 'Claims to read, but creates a table.',
      scope: 'peek:read',
      input: z.object({}),
      output: z.object({ done: z.boolean() }),
      annotations: ro,
      handler: async (_args, ctx) => {
        await ctx.sql`create table sneaked (a int)`;
        return { done: true };
      },
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.sql`insert into customers (id, name, email) values ('C-1001', 'One', 'one@example.com'), ('C-1002', 'Two', 'two@example.com')`;
  server = await startTestServer(def, { db });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

async function peek(url: URL, customerId: string | null) {
  const client = await connectTestClient(url, await issueTestToken(db.sql, def, { customerId }));
  const result = await client.callTool({ name: 'peek_settings', arguments: {} });
  await client.close();
  return result.structuredContent;
}

describe('a read-only call', () => {
  it('sees its own customer and time limit, read-only, whoever used the connection before', async () => {
    // More calls than the read pool has connections, alternating customers: none sees another's setting.
    for (const customerId of ['C-1001', 'C-1002', null, 'C-1002', 'C-1001', null, 'C-1001', 'C-1002'])
      expect(await peek(server.url, customerId)).toEqual({
        customer: customerId ?? '',
        timeout: '1500ms',
        readOnly: 'on',
      });
  });

  it('cannot write: the database refuses, and the call is an internal error with nothing made', async () => {
    const client = await connectTestClient(server.url, await issueTestToken(db.sql, def));
    const result = await client.callTool({ name: 'sneak_write', arguments: {} });
    await client.close();
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('Internal error');
    const [table] = await db.sql`select to_regclass('sneaked') as t`;
    expect(table!.t).toBeNull();
    const [event] = await db.sql<{ outcome: string }[]>`
      select outcome from audit_events where tool = 'sneak_write' order by seq desc limit 1`;
    expect(event!.outcome).toBe('internal_error');
  });

  it('without a read pool, borrows a connection of the main pool and gives it back as it was', async () => {
    const one = createSql((await db.as(def.name)).url, { max: 1 });
    const single = await startTestServer(def, { db, sql: one });
    try {
      expect(await peek(single.url, 'C-1002')).toEqual({
        customer: 'C-1002',
        timeout: '1500ms',
        readOnly: 'on',
      });
      // The same (only) connection, as the next user of the pool finds it.
      const [after] = await one<{ customer: string | null; readOnly: string; timeout: string }[]>`
        select current_setting('bulkhead.customer_id', true) as customer,
          current_setting('default_transaction_read_only') as "readOnly",
          current_setting('statement_timeout') as timeout`;
      expect(after).toEqual({ customer: '', readOnly: 'off', timeout: '0' });
      // And the call's own event went through it.
      const [event] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from audit_events where tool = 'peek_settings' and outcome = 'ok'`;
      expect(event!.n).toBeGreaterThan(0);
    } finally {
      await single.close();
      await one.end();
    }
  });

  it('answers within its time limit when the read pool gets no connection, and /readyz says the read pool cannot serve', async () => {
    // A "database" that takes connections and never answers: the read pool's connections never open.
    const sockets: Socket[] = [];
    const silent = createTcpServer((socket) => sockets.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const reads = createSql(`postgres://nobody@127.0.0.1:${(silent.address() as AddressInfo).port}/none`, {
      max: 2,
      readOnly: true,
      connectTimeout: 30,
    });
    const stuck = await startTestServer(def, { db, reads });
    try {
      const client = await connectTestClient(
        stuck.url,
        await issueTestToken(db.sql, def, { customerId: 'C-1001' }),
      );
      // The read pool never answers: only the time limit (1.5 s), counting the wait for a connection, ends the call.
      const result = await client.callTool({ name: 'peek_settings', arguments: {} });
      await client.close();
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain('could not reach the database');
      const [event] = await db.sql<{ outcome: string }[]>`
        select outcome from audit_events where tool = 'peek_settings' order by seq desc limit 1`;
      expect(event!.outcome).toBe('unavailable');
      const ready = await fetch(new URL('/readyz', stuck.url));
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: 'unavailable',
        server: def.name,
        reason: 'read pool cannot serve',
      });
      // The same server with a read pool that serves is ready.
      expect((await fetch(new URL('/readyz', server.url))).status).toBe(200);
    } finally {
      await stuck.close();
      await reads.end({ timeout: 0 });
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => silent.close(r));
    }
  });
});
