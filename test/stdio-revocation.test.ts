import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { issueToken, revokeToken } from '@bulkhead/core/operator';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { root } from './helpers.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

it('a stdio connection refuses the next request once its token is revoked, and audits it', async () => {
  const { token, record } = await issueToken(db.sql, {
    server: 'dev-knowledge',
    label: 'desktop over stdio',
    scopes: ['docs:read'],
    expiresAt: null,
    createdBy: 'test',
  });
  const client = new Client({ name: 'stdio-revocation', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', `${root}servers/dev-knowledge/src/main.ts`, '--stdio'],
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: (await db.as('dev-knowledge')).url,
        BULKHEAD_MIGRATE: 'false',
        BULKHEAD_TOKEN: token,
      },
      stderr: 'pipe',
    }),
  );
  try {
    const before = await client.callTool({ name: 'search_docs', arguments: { query: 'token rotation' } });
    expect(before.isError).toBeFalsy();
    await revokeToken(db.sql, record.id);
    // The promise is "refused within 1 s" (the revocation notice, or at worst the 900 ms cache age):
    // the next request after that bound must be refused, whatever the machine's load.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await expect(
      client.callTool({ name: 'search_docs', arguments: { query: 'token rotation' } }),
    ).rejects.toThrow('BULKHEAD_TOKEN has been revoked; nothing was done');
    await expect(client.listTools()).rejects.toThrow(/has been revoked/);
  } finally {
    await client.close();
  }
  const events = await db.sql`select outcome, token_id, method from audit_events order by seq`;
  expect(events).toEqual([
    { outcome: 'ok', token_id: record.id, method: 'tools/call' },
    { outcome: 'unauthorized', token_id: record.id, method: 'stdio' },
    { outcome: 'unauthorized', token_id: record.id, method: 'stdio' },
  ]);
}, 60_000);
