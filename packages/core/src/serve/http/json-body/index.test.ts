import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp, createServer, defineTool } from '../../../index.ts';
import {
  connectTestClient,
  issueTestToken,
  mcpSender,
  postMcp,
  startTestServer,
  type TestServer,
} from '../../../testing/index.ts';

// Findings of a run of hostile requests against the servers (issue 31): the body and its arguments held
// to structural limits, and a body cut off mid-way. (The same run's batch units and refused tokens are
// tested beside their guards, rate-limit/ and bearer-auth/.)

const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const def = createServer({
  name: 'limits-test',
  version: '1.0.0',
  description: 'A server for the limits tests.',
  tools: [
    defineTool({
      name: 'get_balance',
      title: 'Balance',
      description: 'No arguments.',
      scope: 'balance:read',
      input: z.strictObject({}),
      annotations: ro,
      handler: async () => ({ due_cents: 0 }),
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
const logLines: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  server = await startTestServer(def, {
    db,
    logger: pino({ level: 'info' }, sink),
  });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

const post = (bearer: string, body: unknown, version?: string) => postMcp(server.url, bearer, body, version);
describe('tool arguments beyond the structural limits', () => {
  it('a 60,000-key arguments object is refused -32602 before the MCP layer copies it; a 5,000-key one by the pipeline, naming keys to remove', async () => {
    const token = await issueTestToken(db.sql, def, { label: 'huge arguments' });
    const client = await connectTestClient(server.url, token);
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'x']));
    await expect(client.callTool({ name: 'get_balance', arguments: keys(60_000) })).rejects.toThrow(
      "Invalid params: the arguments hold more than 10000 keys; a tool's arguments hold at most 1000 values. Nothing was done;",
    );
    const text = async (args: Record<string, unknown>) => {
      const result = await client.callTool({ name: 'get_balance', arguments: args });
      expect(result.isError).toBe(true);
      return (result.content as { text: string }[])[0]!.text;
    };
    const bounds = 'arguments hold at most 1000 values, 32 levels deep and 65536 characters of text';
    expect(await text(keys(5_000))).toBe(
      `Invalid arguments — "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9" and 4,990 more: not arguments of this tool, more than 1000 values in all (${bounds}); remove them. Nothing was done; call again with corrected arguments.`,
    );
    expect(await text({ list: Array.from({ length: 5000 }, () => 1) })).toBe(
      `Invalid arguments — "list": more than 1000 values (${bounds}). Nothing was done; call again with corrected arguments.`,
    );
    expect(await text({ note: 'x'.repeat(70_000) })).toBe(
      `Invalid arguments — "note": more than 65536 characters of text (${bounds}). Nothing was done; call again with corrected arguments.`,
    );
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = [deep];
    expect(await text({ nested: deep })).toContain('"nested": nested deeper than 32 levels');
    // Arguments within the limits still reach the schema, which names what is wrong.
    expect(await text({ k0: 'x' })).toContain('"k0"');
    await client.close();
    const rows = await db.sql<{ outcome: string; args: unknown; summary: Record<string, unknown> }[]>`
      select outcome, arguments as args, result_summary as summary from audit_events
      where token_label = 'huge arguments' and method = 'tools/call' order by seq`;
    expect(rows.map((r) => [r.outcome, r.args])).toEqual([
      ['invalid_arguments', null],
      ['invalid_arguments', null],
      ['invalid_arguments', null],
      ['invalid_arguments', null],
      ['invalid_arguments', null],
      ['invalid_arguments', { k0: 'x' }],
    ]);
    expect(rows[0]!.summary).toEqual({
      status: 400,
      reason: 'arguments_too_large',
      problem: 'more than 10000 keys',
    });
  });
});

describe('params of other methods beyond the same limits', () => {
  it('a tools/list whose _meta holds 60,000 keys is refused -32602 and audited', async () => {
    const token = await issueTestToken(db.sql, def, { label: 'huge meta' });
    const _meta = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k${i}`, 'x']));
    const res = await post(
      token,
      { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta } },
      '2025-11-25',
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32602,
        message:
          "Invalid params: params._meta holds more than 1000 values. A request's params hold at most 1000 values, 32 levels deep and 65536 characters of text; nothing was done.",
      },
    });
    const rows = await db.sql`
      select outcome, result_summary as summary from audit_events where token_label = 'huge meta'`;
    expect(rows).toEqual([
      {
        outcome: 'bad_request',
        summary: {
          status: 400,
          reason: 'params_too_large',
          field: '_meta',
          problem: 'more than 1000 values',
        },
      },
    ]);
  });
});

describe('a client that closes the connection mid-body', () => {
  it('is a 400-class refusal in the audit log, with no stack trace logged and no internal_error', async () => {
    const token = await issueTestToken(db.sql, def, { label: 'went away' });
    const socket = connect(Number(server.url.port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":"2.0","id":1,`,
    );
    await sleep(50);
    socket.destroy();
    let rows: { outcome: string; summary: Record<string, unknown> }[] = [];
    for (let i = 0; i < 100 && rows.length === 0; i++) {
      await sleep(20);
      rows = await db.sql`
        select outcome, result_summary as summary from audit_events where token_label = 'went away'`;
    }
    expect(rows).toEqual([{ outcome: 'bad_request', summary: { status: 400, reason: 'body_aborted' } }]);
    const logged = logLines.map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown });
    expect(logged.filter((l) => l.level >= 50 || l.err !== undefined)).toEqual([]);
    expect(logged.some((l) => l.msg === 'request refused')).toBe(true);
  });
});

describe('bodies that are not one JSON-RPC message', () => {
  it('answers and audits a non-JSON body and a batch (under 2025-11-25)', async () => {
    const { app, close } = createHttpApp(def, {
      sql: db.sql,
      logger: pino({ level: 'silent' }),
      publicUrl: 'http://127.0.0.1',
    });
    const own = await issueTestToken(db.sql, def, { label: 'malformed sender' });
    const send = mcpSender(app, own);
    const notJson = await send('POST', '{"jsonrpc": ');
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.code).toBe(-32700);
    const batch = await send('POST', JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]));
    expect(batch.status).toBe(400);
    expect((await batch.json()).error.code).toBe(-32600);
    await close();
    const rows = await db.sql<{ outcome: string; reason: string; status: number }[]>`
      select outcome, result_summary->>'reason' as reason, (result_summary->>'status')::int as status
      from audit_events where token_label = 'malformed sender' order by seq`;
    expect(rows).toEqual([
      { outcome: 'bad_request', reason: 'parse', status: 400 },
      { outcome: 'bad_request', reason: 'batch', status: 400 },
    ]);
  });

  it('a batch under 2025-11-25 is refused with a message that says why', async () => {
    const token = await issueTestToken(db.sql, def, { label: 'batch under 2025-11-25' });
    const res = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`,
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]),
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toBe(
      'Batches are not part of protocol revision 2025-11-25: send one JSON-RPC message per request.',
    );
  });
});
