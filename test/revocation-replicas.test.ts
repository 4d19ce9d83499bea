import { revokeToken } from '@bulkhead/core';
import { issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

let db: TestDatabase;
let replicas: ServerProcess[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  replicas = await Promise.all([spawnServer('dev-knowledge', db.url), spawnServer('dev-knowledge', db.url)]);
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await db.drop();
});

const list = (url: URL, token: string) =>
  fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  }).then((r) => r.status);

it('a revoked token is refused by every replica on its very next request', async () => {
  const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'replicated client' });
  for (const r of replicas) expect(await list(r.url, token)).not.toBe(401);
  await revokeToken(db.sql, token.split('_')[2]!);
  const started = Date.now();
  expect(await Promise.all(replicas.map((r) => list(r.url, token)))).toEqual([401, 401]);
  expect(Date.now() - started).toBeLessThan(1000);
});
