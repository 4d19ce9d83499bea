import { parseToken, revokeToken, rotateToken } from '@bulkhead/core/operator';
import { issueTestToken } from '@bulkhead/core/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { listStatus, spawnServer, type ServerProcess } from './helpers.ts';

let db: TestDatabase;
let replicas: ServerProcess[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  const url = (await db.as('dev-knowledge')).url;
  replicas = await Promise.all([spawnServer('dev-knowledge', url), spawnServer('dev-knowledge', url)]);
}, 60_000);
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await db.drop();
});

/**
 * Asks every replica until each refuses `token` (a replica that never does times the test out). How
 * soon is the token cache's promise, tested with the clock in hand in packages/core/src/serve/tokens.test.ts:
 * a verdict kept under a second, dropped at once when the database announces the change.
 */
async function untilRefusedEverywhere(token: string): Promise<void> {
  const refused = new Set<number>();
  while (refused.size < replicas.length) {
    const statuses = await Promise.all(replicas.map((r) => listStatus(r.url, token)));
    statuses.forEach((s, i) => s === 401 && refused.add(i));
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Keeps both replicas' caches warm with `token`, so that a refusal must come from an invalidation. */
async function warm(token: string): Promise<void> {
  for (let i = 0; i < 3; i++) for (const r of replicas) expect(await listStatus(r.url, token)).toBe(200);
}

it('a revoked token is refused by every replica (the database announces it)', async () => {
  const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'replicated client' });
  await warm(token);
  // Each replica's token cache hears the announcement on a session of its own.
  const [listening] = await db.admin<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and query = 'listen "bulkhead_tokens"'`;
  expect(listening!.n).toBe(replicas.length);
  await revokeToken(db.sql, parseToken(token)!.id);
  await untilRefusedEverywhere(token);
});

it('a rotated token is refused by every replica, and its successor works at once', async () => {
  const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'rotated client' });
  await warm(token);
  const next = (await rotateToken(db.sql, parseToken(token)!.id, 'test'))!;
  await untilRefusedEverywhere(token);
  for (const r of replicas) expect(await listStatus(r.url, next.token)).toBe(200);
});

it('even when the announcement is lost, a revoked token is refused (verdicts are kept under a second)', async () => {
  const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'unannounced client' });
  await warm(token);
  // Revoke without the trigger that announces it: as if the notification never arrived.
  await db.sql.begin(async (tx) => {
    await tx`alter table bulkhead_tokens disable trigger bulkhead_tokens_changed`;
    await tx`update bulkhead_tokens set revoked_at = now() where id = ${parseToken(token)!.id}`;
    await tx`alter table bulkhead_tokens enable trigger bulkhead_tokens_changed`;
  });
  await untilRefusedEverywhere(token);
});
