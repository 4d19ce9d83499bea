import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool, ToolError } from '../index.ts';
import { issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
let aborted = false;

const def = createServer({
  name: 'kit-test',
  version: '1.0.0',
  description: 'A server built in the test.',
  tools: [
    defineTool({
      name: 'add_numbers',
      title: 'Add numbers',
      description: 'Adds a and b.',
      scope: 'math:read',
      input: z.object({
        a: z.number().int().min(0).max(100),
        b: z.number().int(),
        mode: z.enum(['exact', 'rounded']).default('exact'),
      }),
      output: z.object({ sum: z.number() }),
      annotations: ro,
      handler: async ({ a, b }) => ({ sum: a + b }),
    }),
    defineTool({
      name: 'find_thing',
      title: 'Find thing',
      description: 'Finds a thing by key.',
      scope: 'things:read',
      input: z.object({ key: z.string().regex(/^T-\d{4}$/) }),
      annotations: ro,
      handler: async ({ key }) => {
        if (key === 'T-0000') throw new ToolError(`thing ${key} not found — check the key`);
        if (key === 'T-0001') throw new Error('relation "secret_table" does not exist');
        return { key };
      },
    }),
    defineTool({
      name: 'wait_forever',
      title: 'Wait forever',
      description: 'Never returns.',
      scope: 'math:read',
      input: z.object({}),
      annotations: ro,
      timeoutMs: 300,
      handler: (_args, ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            resolve({});
          });
        }),
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

function modernClient() {
  return new Client(
    { name: 'modern-test', version: '2.4.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
}
const headers = () => ({ requestInit: { headers: { Authorization: `Bearer ${token}` } } });

describe('a 2026-07-28 client over HTTP', () => {
  it('lists the tools with precomputed schemas and calls one', async () => {
    const client = modernClient();
    await client.connect(new StreamableHTTPClientTransport(server.url, headers()));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['add_numbers', 'find_thing', 'wait_forever']);
    expect(tools[0]!.inputSchema.required).toEqual(['a', 'b']);
    const result = await client.callTool({ name: 'add_numbers', arguments: { a: 2, b: 3 } });
    expect(result.structuredContent).toEqual({ sum: 5 });
    expect(result.isError).toBeFalsy();
    await client.close();
  });

  it('answers an unknown tool with JSON-RPC -32602', async () => {
    const client = modernClient();
    await client.connect(new StreamableHTTPClientTransport(server.url, headers()));
    await expect(client.callTool({ name: 'drop_everything', arguments: {} })).rejects.toMatchObject({
      code: -32602,
    });
    await client.close();
  });

  it('names the field, the wrong value and what is valid', async () => {
    const client = modernClient();
    await client.connect(new StreamableHTTPClientTransport(server.url, headers()));
    const enumResult = await client.callTool({
      name: 'add_numbers',
      arguments: { a: 1, b: 2, mode: 'fuzzy' },
    });
    expect(enumResult.isError).toBe(true);
    expect(enumResult.content).toEqual([
      {
        type: 'text',
        text: 'Invalid arguments — mode: got "fuzzy", expected one of "exact", "rounded". Nothing was done; call again with corrected arguments.',
      },
    ]);
    const range = await client.callTool({ name: 'add_numbers', arguments: { a: 500, b: 2 } });
    expect((range.content as { text: string }[])[0]!.text).toContain('a: got 500, expected a number <= 100');
    const pattern = await client.callTool({ name: 'find_thing', arguments: { key: 'X-1' } });
    expect((pattern.content as { text: string }[])[0]!.text).toContain(
      'key: got "X-1", expected a value matching /^T-\\d{4}$/',
    );
    const missing = await client.callTool({ name: 'add_numbers', arguments: { a: 1 } });
    expect((missing.content as { text: string }[])[0]!.text).toContain(
      'b: got missing, expected a value of type number',
    );
    await client.close();
  });

  it('turns a ToolError into its sentence and hides anything else behind an incident id', async () => {
    const client = modernClient();
    await client.connect(new StreamableHTTPClientTransport(server.url, headers()));
    const domain = await client.callTool({ name: 'find_thing', arguments: { key: 'T-0000' } });
    expect(domain).toMatchObject({
      isError: true,
      content: [{ type: 'text', text: 'thing T-0000 not found — check the key' }],
    });
    const internal = await client.callTool({ name: 'find_thing', arguments: { key: 'T-0001' } });
    const text = (internal.content as { text: string }[])[0]!.text;
    expect(internal.isError).toBe(true);
    expect(text).toMatch(/^Internal error, incident [0-9a-f]{8}\./);
    expect(text).not.toContain('secret_table');
    await client.close();
  });

  it('cuts a hanging handler off at its limit and aborts its signal', async () => {
    const client = modernClient();
    await client.connect(new StreamableHTTPClientTransport(server.url, headers()));
    // The handler never settles: only the time limit can answer this call (else the test times out).
    const result = await client.callTool({ name: 'wait_forever', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      content: [
        {
          type: 'text',
          text: 'wait_forever did not finish within 0.3 s and was stopped; nothing it did was kept. Try again, or narrow the request.',
        },
      ],
    });
    expect(aborted).toBe(true);
    await client.close();
  });
});

describe('a 2025-11-25 client over HTTP', () => {
  it('negotiates 2025-11-25, lists and calls', async () => {
    const client = new LegacyClient({ name: 'legacy-test', version: '1.32.2' });
    const transport = new LegacyTransport(server.url, headers());
    await client.connect(transport);
    expect(transport.protocolVersion).toBe('2025-11-25');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['add_numbers', 'find_thing', 'wait_forever']);
    const result = await client.callTool({ name: 'add_numbers', arguments: { a: 40, b: 2 } });
    expect(result.structuredContent).toEqual({ sum: 42 });
    const invalid = await client.callTool({ name: 'add_numbers', arguments: { a: 'x', b: 2 } });
    expect(invalid.isError).toBe(true);
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    await client.close();
  });
});

describe('a 2025-03-26 client', () => {
  it('sends a batch: every message answered in one response, every call audited on its own', async () => {
    const own = await issueTestToken(db.sql, def, { label: 'batch sender' });
    const res = await fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${own}`,
        'mcp-protocol-version': '2025-03-26',
      },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'add_numbers', arguments: { a: 2, b: 3 } },
        },
        {
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'add_numbers', arguments: { a: -1, b: 3 } },
        },
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } },
      ]),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // One JSON array, or one event per answer: either way, three answers, by id.
    const answers = (
      res.headers.get('content-type')?.startsWith('text/event-stream')
        ? text
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .flatMap((l) => JSON.parse(l.slice(6)) as unknown)
        : (JSON.parse(text) as unknown[])
    ) as { id: number; result?: { tools?: unknown[]; structuredContent?: unknown; isError?: boolean } }[];
    const byId = new Map(answers.map((a) => [a.id, a.result]));
    expect([...byId.keys()].sort()).toEqual([1, 2, 3]);
    expect(byId.get(1)!.tools).toHaveLength(3);
    expect(byId.get(2)!.structuredContent).toEqual({ sum: 5 });
    expect(byId.get(3)!.isError).toBe(true);
    const rows = await db.sql<{ method: string; tool: string | null; outcome: string }[]>`
      select method, tool, outcome from audit_events where token_label = 'batch sender' order by tool, outcome`;
    expect(rows).toEqual([
      { method: 'tools/call', tool: 'add_numbers', outcome: 'invalid_arguments' },
      { method: 'tools/call', tool: 'add_numbers', outcome: 'ok' },
    ]);
  });
});
