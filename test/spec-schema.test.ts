import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as Client2025 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as Transport2025 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ServerDefinition } from '@bulkhead/core';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { specSchema, type Revision } from './mcp-spec-schema.ts';
import { discoverMcpServers, discoverServerDefinitions } from './servers.ts';

/** A JSON-RPC message as it crossed the wire, with the method of the request it answers. */
interface Seen {
  method: string;
  message: { result?: unknown; error?: unknown };
}

/**
 * A fetch that records every JSON-RPC response the server sent (plain JSON or
 * server-sent events), keyed back to its request's method: the validation
 * reads the bytes the server wrote, not what a client made of them.
 */
function recordingFetch(seen: Seen[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as unknown) : undefined;
    const requests = (Array.isArray(body) ? body : [body]) as { id?: unknown; method?: string }[];
    const methods = new Map(requests.filter((r) => r?.id !== undefined).map((r) => [r.id, r.method!]));
    if (!methods.size) return response;
    const text = await response.clone().text();
    const payloads = (response.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
      : [text];
    for (const payload of payloads.filter(Boolean)) {
      const message = JSON.parse(payload) as { id?: unknown; result?: unknown; error?: unknown };
      if (methods.has(message.id)) seen.push({ method: methods.get(message.id)!, message });
    }
    return response;
  };
}

/** A validator of one definition of a revision's schema, with formats (uri, date-time, …) checked. */
function validator(revision: Revision) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const id = `mcp://${revision}/schema.json`;
  ajv.addSchema({ ...specSchema(revision), $id: id });
  return (definition: string, value: unknown) => {
    const validate = ajv.getSchema(`${id}#/$defs/${definition}`)!;
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
  };
}

let db: TestDatabase;
const definitions: ServerDefinition[] = await discoverServerDefinitions();
const running = new Map<string, { server: TestServer; token: string }>();

beforeAll(async () => {
  db = await createTestDatabase();
  for (const def of definitions) {
    const customerId = discoverMcpServers().find((m) => m.name === def.name)!.customerBound ? 'C-1001' : null;
    if (customerId)
      await db.sql`insert into customers (id, name, email) values ('C-1001', 'Nordlicht GmbH', 'a@b.example') on conflict do nothing`;
    running.set(def.name, {
      server: await startTestServer(def, { db }),
      token: await issueTestToken(db.sql, def, { customerId }),
    });
  }
});
afterAll(async () => {
  for (const { server } of running.values()) await server.close();
  await db?.drop();
});

describe('the servers’ answers against the MCP specification’s JSON schemas, formats included', () => {
  it('finds the MCP servers from their package.json manifests', () => {
    expect(definitions.map((d) => d.name)).toEqual(
      expect.arrayContaining(['admin', 'customer', 'dev-knowledge']),
    );
  });

  describe.each(definitions.map((d) => d.name))('%s', (name) => {
    it('2025-11-25: initialize and tools/list are valid InitializeResult and ListToolsResult', async () => {
      const { server, token } = running.get(name)!;
      const seen: Seen[] = [];
      const client = new Client2025({ name: 'schema-check', version: '1.0.0' });
      await client.connect(
        new Transport2025(server.url, {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
          fetch: recordingFetch(seen),
        }),
      );
      await client.listTools();
      await client.close();
      const check = validator('2025-11-25');
      expect(seen.map((s) => s.method)).toEqual(['initialize', 'tools/list']);
      const [initialize, tools] = seen;
      expect((initialize!.message.result as { protocolVersion: string }).protocolVersion).toBe('2025-11-25');
      expect(check('InitializeResult', initialize!.message.result)).toEqual([]);
      expect(check('ListToolsResult', tools!.message.result)).toEqual([]);
      expect(check('JSONRPCResultResponse', tools!.message)).toEqual([]);
    });

    it('2026-07-28: server/discover and tools/list are valid DiscoverResult and ListToolsResult', async () => {
      const { server, token } = running.get(name)!;
      const seen: Seen[] = [];
      const client = new Client(
        { name: 'schema-check', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(server.url, {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
          fetch: recordingFetch(seen),
        }),
      );
      await client.request({ method: 'server/discover', params: {} });
      await client.listTools();
      await client.close();
      const check = validator('2026-07-28');
      const discover = seen.find((s) => s.method === 'server/discover')!;
      const tools = seen.find((s) => s.method === 'tools/list')!;
      expect(discover.message.error).toBeUndefined();
      expect(check('DiscoverResult', discover.message.result)).toEqual([]);
      expect(check('ListToolsResult', tools.message.result)).toEqual([]);
      // The server's icon travels with every 2026 result (serverInfo in _meta): checked there too.
      expect(JSON.stringify(tools.message.result)).toContain('"icons":[{"src":"data:image/svg+xml,');
    });
  });

  it('catches what it is for: an icon with raw spaces is refused as format uri in both revisions', () => {
    const icon = { src: "data:image/svg+xml,<svg xmlns='http://www.w3.org/2000/svg'></svg>" };
    const tool = { name: 't', inputSchema: { type: 'object' }, icons: [icon] };
    for (const revision of ['2025-11-25', '2026-07-28'] as const)
      expect(validator(revision)('Tool', tool)).toEqual(['/icons/0/src must match format "uri"']);
  });
});
