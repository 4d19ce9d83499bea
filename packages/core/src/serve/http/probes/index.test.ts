import { createServer as createTcpServer, connect, type Server as TcpServer, type Socket } from 'node:net';
import { createSql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp } from '../../../index.ts';
import { addNumbersServer, startTestServer, type TestServer } from '../../../testing/index.ts';

// The probes: /healthz while the process lives, /readyz while both pools serve.

const def = addNumbersServer('probes-test', 'A server for the probes.');

let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

it('/healthz is 200 while the process lives', async () => {
  const res = await fetch(new URL('/healthz', server.url));
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'ok', server: 'probes-test' });
});

it('/readyz turns 503 when the database is gone and 200 when it returns', async () => {
  // A TCP relay in front of the real database lets the test take the database away and bring it back.
  const target = new URL(db.url);
  const sockets = new Set<Socket>();
  let relay: TcpServer | undefined;
  const open = () =>
    new Promise<number>((resolve) => {
      relay = createTcpServer((inbound) => {
        const outbound = connect(Number(target.port || 5432), target.hostname);
        sockets.add(inbound).add(outbound);
        inbound.pipe(outbound).pipe(inbound);
        const drop = () => {
          inbound.destroy();
          outbound.destroy();
        };
        inbound.on('error', drop).on('close', drop);
        outbound.on('error', drop).on('close', drop);
      });
      relay.listen(port, '127.0.0.1', () => resolve((relay!.address() as { port: number }).port));
    });
  let port = 0;
  port = await open();
  const viaRelay = new URL(db.url);
  viaRelay.hostname = '127.0.0.1';
  viaRelay.port = String(port);
  const sql = createSql(viaRelay.toString(), { max: 2 });
  const { app, close } = createHttpApp(def, {
    sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
  });
  expect((await app.request('/readyz')).status).toBe(200);

  const closed = new Promise((resolve) => relay!.close(resolve));
  for (const s of sockets) s.destroy();
  await closed;
  const down = await app.request('/readyz');
  expect(down.status).toBe(503);
  expect(await down.json()).toEqual({
    status: 'unavailable',
    server: 'probes-test',
    reason: 'database unreachable',
  });

  await open();
  let status = 0;
  for (let i = 0; i < 20 && status !== 200; i++) {
    status = (await app.request('/readyz')).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 250));
  }
  expect(status).toBe(200);
  await close();
  await sql.end({ timeout: 1 });
  const done = new Promise((resolve) => relay!.close(resolve));
  for (const s of sockets) s.destroy();
  await done;
});
