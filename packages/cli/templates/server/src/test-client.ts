import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import {
  createLogger, // @if gated
  createUpstreams,
  resolveUpstreams,
  untrusted,
} from '@bulkhead/core';
import { startApprovalExecutor, type ApprovalExecutor } from '@bulkhead/core/operator'; // @if gated
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { UPSTREAMS } from './env.ts';
import { __SERVER__ } from './server.ts';
import { __TOKEN_OPTIONS__ } from './stand-ins.ts';

/** A request the stub received: its method, its path and query, its JSON body and idempotency key. */
export interface Received {
  method: string;
  url: string;
  json: unknown;
  key: string | undefined;
}

/** The one operation a stub answers (anything else is a 404). */
export interface StubRoute {
  method: string;
  /** As sent, placeholders filled; the query is not compared. */
  path: string;
  status: number;
  /** Sent as JSON; null sends an empty body. */
  body: unknown;
}

// @if gated
/** A fresh database, the server on a random port, its approval executor and a client, its upstream a local stub. */
// @else
/** A fresh database, the server on a random port and a client, its upstream a local stub. */
// @end
export interface Harness {
  db: TestDatabase;
  server: TestServer;
  client: Client;
  /** What reached the stub, in order. */
  received: Received[];
  // @if gated
  /** Runs approved requests and sends their effects; `drain()` waits until it has. */
  executor: ApprovalExecutor;
  // @end
  close(): Promise<void>;
}

/** Starts the upstream's stub (a real HTTP server on 127.0.0.1), then the server reaching it. */
export async function startHarness(route: StubRoute): Promise<Harness> {
  const received: Received[] = [];
  const stub = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({
        method: req.method!,
        url: req.url!,
        json: body ? JSON.parse(body) : undefined,
        key: req.headers['idempotency-key'] as string | undefined,
      });
      if (req.method !== route.method || req.url!.split('?')[0] !== route.path)
        return res.writeHead(404).end();
      const answer = route.body === null ? '' : JSON.stringify(route.body);
      res.writeHead(route.status, { 'content-type': 'application/json' }).end(answer);
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  // What the upstream's manifest entry reads: its base URL is the stub's, each secret a placeholder.
  const env: Record<string, string> = {};
  for (const u of Object.values(UPSTREAMS)) {
    env[u.baseUrlEnv] = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
    for (const [key, value] of Object.entries(u.auth)) if (key.endsWith('Env')) env[value] = 'test-secret';
  }
  const upstreams = createUpstreams(resolveUpstreams(UPSTREAMS, env));
  const db = await createTestDatabase();
  const server = await startTestServer(__SERVER__, { db, upstreams });
  const token = await issueTestToken(db.sql, __SERVER__, __TOKEN_OPTIONS__);
  const client = await connectTestClient(server.url, token);
  // @if gated
  const executor = startApprovalExecutor(__SERVER__, {
    sql: server.sql,
    logger: createLogger({ level: 'silent' }),
    upstreams,
  });
  await executor.ready;
  // @end
  return {
    db,
    server,
    client,
    received,
    executor, // @if gated
    close: async () => {
      await executor.stop(); // @if gated
      await client.close();
      await server.close();
      await upstreams.close();
      stub.closeAllConnections();
      await new Promise((resolve) => stub.close(resolve));
      await db.drop();
    },
  };
}

/** What a read tool returns of an upstream's JSON: every string marked untrusted, naming `source`. */
export function marked(value: unknown, source: string): unknown {
  if (typeof value === 'string') return untrusted(value, { source });
  if (Array.isArray(value)) return value.map((v) => marked(v, source));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, marked(v, source)]));
  return value;
}
