import type { Client } from '@modelcontextprotocol/client';
import { createLogger, createUpstreams, resolveUpstreams, type Upstreams } from '@bulkhead/core';
import { startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type FlatResult,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { UPSTREAMS } from './env.ts';
import { opsServer } from './server.ts';
import { startAlertmanager, type TestAlertmanager } from './fixtures/alertmanager.ts';

/** The label of the test token: who asks, as previews name it. */
export const ASKER = 'Ana on call';

/** The ops server's upstreams with Alertmanager at `url`, resolved as main.ts resolves them. */
export function upstreamsAt(url: string): Upstreams {
  return createUpstreams(resolveUpstreams(UPSTREAMS, { BULKHEAD_OPS_ALERTMANAGER_URL: url }));
}

/** A real Alertmanager, a fresh database, the ops server on a random port and a client with every scope. */
export interface OpsHarness {
  am: TestAlertmanager;
  db: TestDatabase;
  server: TestServer;
  upstreams: Upstreams;
  client: Client;
  call(name: string, args?: Record<string, unknown>): Promise<FlatResult>;
  /** Starts an approval executor (delivering to Alertmanager, or to `url` instead); stop it before close. */
  executor(url?: string): Promise<ApprovalExecutor & { upstreams: Upstreams }>;
  close(): Promise<void>;
}

export async function startOps(): Promise<OpsHarness> {
  const am = await startAlertmanager();
  const db = await createTestDatabase();
  const upstreams = upstreamsAt(am.url);
  const server = await startTestServer(opsServer, { db, upstreams });
  const client = await connectTestClient(
    server.url,
    await issueTestToken(db.sql, opsServer, { label: ASKER }),
    'ops-test',
  );
  return {
    am,
    db,
    server,
    upstreams,
    client,
    call: (name, args) => callFlat(client, name, args),
    async executor(url = am.url) {
      const own = upstreamsAt(url);
      const executor = startApprovalExecutor(opsServer, {
        sql: server.sql,
        logger: createLogger({ level: 'silent' }),
        upstreams: own,
        retry: { baseDelayMs: 100 },
        sweepIntervalMs: 200,
      });
      await executor.ready;
      return {
        ...executor,
        upstreams: own,
        stop: async () => {
          await executor.stop();
          await own.close();
        },
      };
    },
    async close() {
      await client.close();
      await server.close();
      await upstreams.close();
      await db.drop();
      await am.close();
    },
  };
}
