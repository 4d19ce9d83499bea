import type { Client } from '@modelcontextprotocol/client';
import type { HttpAppOptions } from '@bulkhead/core';
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
import { adminServer } from './server.ts';

/** A tool result as the tests read it. */
export type CallResult = FlatResult;

/** A seeded database, the admin server on a random port, and an MCP client with a token for it. */
export interface AdminHarness {
  db: TestDatabase;
  server: TestServer;
  client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<CallResult>;
  close(): Promise<void>;
}

/** Connects a 2026-07-28 client with `token` to `url`. */
export const connectClient = (url: URL, token: string): Promise<Client> =>
  connectTestClient(url, token, 'admin-test');

/** Calls a tool and flattens the result to `{ isError, text, structured }`. */
export const callTool = callFlat;

/** Everything a test file needs: a fresh database with the demo data and a connected client. */
export async function startAdmin(options: Partial<HttpAppOptions> = {}): Promise<AdminHarness> {
  const db = await createTestDatabase();
  await seedDemo(db.sql);
  const server = await startTestServer(adminServer, { ...options, db });
  const client = await connectClient(server.url, await issueTestToken(db.sql, adminServer));
  return {
    db,
    server,
    client,
    call: (name, args) => callTool(client, name, args),
    close: async () => {
      await client.close();
      await server.close();
      await db.drop();
    },
  };
}
