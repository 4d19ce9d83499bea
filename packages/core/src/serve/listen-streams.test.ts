import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createServer, defineTool } from '../index.ts';
import { revokeToken } from './tokens.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

// Issue 43: 40 listen streams on one token were accepted (tasks/result waits are capped at 10), and a
// stream opened before `tokens revoke` kept hearing of list changes after it.

const def = createServer({
  name: 'listen-test',
  version: '1.0.0',
  description: 'A server whose clients listen for list changes.',
  tools: [
    defineTool({
      name: 'count_things',
      title: 'Count things',
      description: 'Counts things. Returns the count.',
      scope: 'things:read',
      input: z.object({}),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      handler: () => Promise.resolve({ count: 0 }),
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, {
    db,
    listenStreams: { limits: { perToken: 2, total: 3 }, recheckMs: 100 },
  });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

async function listening(token: string) {
  const client = await connectTestClient(server.url, token);
  try {
    return { client, subscription: await client.listen({ toolsListChanged: true }) };
  } catch (err) {
    await client.close();
    throw err;
  }
}

describe('subscriptions/listen', () => {
  it('is capped per token and per process, as tasks/result waits are', async () => {
    const a = await issueTestToken(db.sql, def, { label: 'a' });
    const b = await issueTestToken(db.sql, def, { label: 'b' });
    const open = [await listening(a), await listening(a)];
    await expect(listening(a)).rejects.toThrow(
      'this token already holds 2 open subscriptions/listen streams: close one before opening another',
    );
    open.push(await listening(b));
    await expect(listening(b)).rejects.toThrow(
      'this server already holds 3 open subscriptions/listen streams: close one before opening another',
    );
    const [refused] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events
      where outcome = 'rate_limited' and result_summary->>'reason' = 'listen_streams'`;
    expect(refused!.n).toBe(2);
    // A stream closed gives its place back.
    await open.shift()!.client.close();
    await expect
      .poll(async () => {
        const again = await listening(a).catch(() => undefined);
        if (again) open.push(again);
        return again !== undefined;
      })
      .toBe(true);
    for (const o of open) await o.client.close();
  });

  it('ends when its token is revoked, and when it expires', async () => {
    const revoked = await issueTestToken(db.sql, def, { label: 'revoked' });
    const expiring = await issueTestToken(db.sql, def, {
      label: 'expiring',
      expiresAt: new Date(Date.now() + 5_000),
    });
    const one = await listening(revoked);
    const two = await listening(expiring);
    await revokeToken(db.sql, revoked.split('_')[2]!);
    expect(['graceful', 'remote']).toContain(await one.subscription.closed);
    // Nothing announces an expiry: the periodic check ends it.
    expect(['graceful', 'remote']).toContain(await two.subscription.closed);
    await one.client.close();
    await two.client.close();
  });
});
