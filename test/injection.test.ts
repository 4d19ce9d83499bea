import { DEMO_INJECTION_TICKETS, seedDemo } from '@bulkhead/demo';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { callFlat, connectTestClient, issueTestToken, startTestServer } from '@bulkhead/core/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminServer } from '../servers/admin/src/server.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
  await seedDemo(db.sql);
});
afterAll(async () => {
  await db.drop();
});

it('every seeded injection ticket comes back from the shipped admin server delimited, flagged, and flagged in the audit log', async () => {
  const server = await startTestServer(adminServer, { db });
  const client = await connectTestClient(server.url, await issueTestToken(db.sql, adminServer), 'injection');
  try {
    for (const key of DEMO_INJECTION_TICKETS) {
      const result = await callFlat(client, 'get_ticket', { key });
      expect(result.isError).toBe(false);
      const nonce = /<untrusted-([0-9a-f]{12}) /.exec(result.text)?.[1];
      expect(nonce, key).toBeDefined();
      // Every opening tag is closed by its own nonce, and nothing else in the text closes a block.
      const opens = result.text.match(new RegExp(`<untrusted-${nonce} `, 'g'))!.length;
      expect(result.text.match(/<\/untrusted-[0-9a-f]{12}>/g)!.length).toBe(opens);
      expect(JSON.stringify(result.structured)).toContain('"injection_suspected":[');
    }
  } finally {
    await client.close();
    await server.close();
  }
  const rows = await db.sql<{ key: string; flagged: boolean }[]>`
    select arguments->>'key' as key, injection_suspected as flagged from audit_events
    where tool = 'get_ticket' order by seq`;
  expect(rows).toEqual(DEMO_INJECTION_TICKETS.map((key) => ({ key, flagged: true })));
});
