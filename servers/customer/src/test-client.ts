import type { Client } from '@modelcontextprotocol/client';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type FlatResult,
  type TestServer,
} from '@bulkhead/core/testing';
import { seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { customerServer } from './server.ts';

/** A tool result as the tests read it. */
export type CallResult = FlatResult;

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
  const server = await startTestServer(customerServer, { db });
  const clients: Client[] = [];
  return {
    db,
    server,
    async connect(customerId, scopes) {
      const token = await issueTestToken(db.sql, customerServer, {
        customerId,
        ...(scopes ? { scopes } : {}),
      });
      const client = await connectTestClient(server.url, token, 'customer-test');
      clients.push(client);
      return {
        client,
        call: (name, args = {}) => callFlat(client, name, args),
      };
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await server.close();
      await db.drop();
    },
  };
}
