import type { Client } from '@modelcontextprotocol/client';
import { createLogger, createMcpUpstreams, type McpUpstreams } from '@bulkhead/core';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { MCP_UPSTREAM, mcpUpstreamConfig } from './env.ts';
import { __SERVER__ } from './server.ts';
import { __TOKEN_OPTIONS__ } from './stand-ins.ts';
import { PINS } from './tools/index.ts';

/** A fresh database, the real upstream (started or reached as the manifest says), the server on a random port and a client. */
export interface Harness {
  db: TestDatabase;
  server: TestServer;
  client: Client;
  upstreams: McpUpstreams;
  close(): Promise<void>;
}

/**
 * Starts the server in front of its real upstream: a command is run as the manifest says, a URL is
 * reached with its header's value from this process's environment (set it before the tests run).
 */
export async function startHarness(): Promise<Harness> {
  const upstreams = createMcpUpstreams([mcpUpstreamConfig()], createLogger({ level: 'silent' }));
  const db = await createTestDatabase();
  const server = await startTestServer(__SERVER__, {
    db,
    mcpUpstreams: upstreams,
    mcpKnownTools: { [MCP_UPSTREAM.name]: PINS.others },
  });
  const token = await issueTestToken(db.sql, __SERVER__, __TOKEN_OPTIONS__);
  const client = await connectTestClient(server.url, token);
  return {
    db,
    server,
    client,
    upstreams,
    close: async () => {
      await client.close();
      await server.close();
      await upstreams.close();
      await db.drop();
    },
  };
}

/** What the audit log holds of the newest call of `tool`: waited for, since events are written in groups. */
export async function lastEvent(
  db: TestDatabase,
  tool: string,
): Promise<{ arguments: unknown; outcome: string; result_summary: { upstream?: unknown[] } | null }> {
  for (;;) {
    const [event] = await db.sql<
      { arguments: unknown; outcome: string; result_summary: { upstream?: unknown[] } | null }[]
    >`select arguments, outcome, result_summary from audit_events where tool = ${tool} order by seq desc limit 1`;
    if (event) return event;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
