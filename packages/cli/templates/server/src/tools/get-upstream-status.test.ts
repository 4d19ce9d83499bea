import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/client';
import { createUpstreams, resolveUpstreams, type Upstreams } from '@bulkhead/core';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  type TestServer,
} from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UPSTREAMS } from '../env.ts';
import { __SERVER__ } from '../server.ts';
import { __TOKEN_OPTIONS__ } from '../stand-ins.ts';

const TOKEN = 'test-upstream-token-0b7d2f';

// The __UPSTREAM__ system, played by a real HTTP server on 127.0.0.1 started by the test.
const seen: IncomingHttpHeaders[] = [];
const upstream = createHttpServer((req, res) => {
  seen.push(req.headers);
  if (req.url !== '/status') return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'text/plain' }).end('all systems operational');
});

let db: TestDatabase;
let upstreams: Upstreams;
let server: TestServer;
let client: Client;

beforeAll(async () => {
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreams = createUpstreams(
    resolveUpstreams(UPSTREAMS, {
      __BASE_URL_ENV__: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
      __TOKEN_ENV__: TOKEN,
    }),
  );
  db = await createTestDatabase();
  server = await startTestServer(__SERVER__, { db, upstreams });
  client = await connectTestClient(server.url, await issueTestToken(db.sql, __SERVER__, __TOKEN_OPTIONS__));
});
afterAll(async () => {
  await client.close();
  await server.close();
  await upstreams.close();
  await new Promise((resolve) => upstream.close(resolve));
  await db.drop();
});

describe('__UPSTREAM_TOOL_NAME__', () => {
  it('reads the status from the __UPSTREAM__ system with its token, marked untrusted', async () => {
    const result = await callFlat(client, '__UPSTREAM_TOOL_NAME__');
    expect([result.isError, result.structured]).toEqual([
      false,
      {
        http_status: 200,
        status: { text: 'all systems operational', source: '__UPSTREAM__ GET /status', untrusted: true },
      },
    ]);
    expect(seen.at(-1)!.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('records the request in its audit event, never the token', async () => {
    const [event] = await db.sql<{ result_summary: { upstream: unknown[] }; text: string }[]>`
      select result_summary, row_to_json(e)::text as text from audit_events e
      where server = ${__SERVER__.name} and tool = '__UPSTREAM_TOOL_NAME__' order by seq desc limit 1`;
    expect(event!.result_summary.upstream).toEqual([
      {
        upstream: '__UPSTREAM__',
        method: 'GET',
        path_template: '/status',
        path: '/status',
        attempt: 1,
        status: 200,
        bytes: 23,
        ms: expect.any(Number),
      },
    ]);
    expect(event!.text).not.toContain(TOKEN);
  });
});
