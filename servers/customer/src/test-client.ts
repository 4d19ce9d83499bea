import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, seedDemo, type TestDatabase } from '@bulkhead/db';
import { customerServer } from './server.ts';

/** A tool result as the tests read it. */
export interface CallResult {
  isError: boolean;
  text: string;
  structured: Record<string, unknown> | undefined;
}

/** A customer's MCP client: `call` flattens results to `{ isError, text, structured }`. */
export interface CustomerClient {
  client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<CallResult>;
}

/** A seeded database and the customer server on a random port; `connect` gives a client for one customer. */
export interface CustomerHarness {
  db: TestDatabase;
  server: TestServer;
  connect(customerId: string | null, scopes?: string[]): Promise<CustomerClient>;
  close(): Promise<void>;
}

/** Starts the harness: a fresh migrated database with the demo data, and the server over real HTTP. */
export async function startHarness(): Promise<CustomerHarness> {
  const db = await createTestDatabase();
  await seedDemo(db.sql);
  const server = await startTestServer(customerServer, { sql: db.sql });
  const clients: Client[] = [];
  return {
    db,
    server,
    async connect(customerId, scopes) {
      const token = await issueTestToken(db.sql, customerServer, {
        customerId,
        ...(scopes ? { scopes } : {}),
      });
      const client = new Client(
        { name: 'customer-test', version: '1.0.0' },
        { versionNegotiation: { mode: { pin: '2026-07-28' } } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(server.url, {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      clients.push(client);
      return {
        client,
        async call(name, args = {}) {
          const result = await client.callTool({ name, arguments: args });
          const content = result.content as { type: string; text?: string }[];
          return {
            isError: result.isError === true,
            text: content.map((c) => c.text ?? '').join('\n'),
            structured: result.structuredContent as Record<string, unknown> | undefined,
          };
        },
      };
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
      await db.drop();
    },
  };
}
