import { Writable } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { verifyChains } from '@bulkhead/audit';
import { createTestDatabase, createSql, type TestDatabase } from '@bulkhead/db';
import { createServer, defineTool, secret } from '@bulkhead/core';
import { issueTestToken, startTestServer } from '@bulkhead/core/testing';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

let db: TestDatabase;
beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

function client(url: URL, token: string) {
  const c = new Client(
    { name: 'audit-test', version: '9.9.9' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  return {
    c,
    connect: () =>
      c.connect(
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      ),
  };
}

describe('the audit log under load', () => {
  it('records exactly 1,000 events for 1,000 concurrent calls across two server processes, and the chain verifies', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer);
    const env = { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' };
    const servers: ServerProcess[] = await Promise.all([
      spawnServer('dev-knowledge', db.url, env),
      spawnServer('dev-knowledge', db.url, env),
    ]);
    try {
      const clients = servers.map((s) => client(s.url, token));
      await Promise.all(clients.map((k) => k.connect()));
      const calls = Array.from({ length: 1000 }, async (_, i) => {
        const server = servers[i % 2]!;
        const { c } = clients[i % 2]!;
        switch (Math.floor(i / 2) % 4) {
          case 0:
            return (await c.callTool({ name: 'search_docs', arguments: { query: 'token rotation' } })).isError
              ? 'bad'
              : 'ok';
          case 1:
            return (await c.callTool({ name: 'search_docs', arguments: { query: 'x y', kind: 'blog' } }))
              .isError
              ? 'invalid_arguments'
              : 'bad';
          case 2:
            return c.callTool({ name: 'drop_tables', arguments: {} }).then(
              () => 'bad',
              (err: { code?: number }) => (err.code === -32602 ? 'unknown_tool' : 'bad'),
            );
          default: {
            const res = await fetch(server.url, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: '{}',
            });
            return res.status === 401 ? 'unauthorized' : 'bad';
          }
        }
      });
      const seen = await Promise.all(calls);
      expect(seen.filter((s) => s === 'bad')).toEqual([]);
      await Promise.all(clients.map((k) => k.c.close()));
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
    const rows = await db.sql<{ outcome: string; n: number }[]>`
      select outcome, count(*)::int as n from audit_events group by outcome order by outcome`;
    expect(rows).toEqual([
      { outcome: 'invalid_arguments', n: 250 },
      { outcome: 'ok', n: 250 },
      { outcome: 'unauthorized', n: 250 },
      { outcome: 'unknown_tool', n: 250 },
    ]);
    const [chain] = await db.sql<{ min: string; max: string; n: number }[]>`
      select min(chain_seq) as min, max(chain_seq) as max, count(distinct chain_seq)::int as n from audit_events where server = 'dev-knowledge'`;
    expect([Number(chain!.min), Number(chain!.max), chain!.n]).toEqual([1, 1000, 1000]);
    const reports = await verifyChains(db.sql);
    expect(reports).toEqual([{ server: 'dev-knowledge', events: 1000, checkpoint: null, break: null }]);
    const [ok] = await db.sql`select * from audit_events where outcome = 'ok' limit 1`;
    expect(ok).toMatchObject({
      tool: 'search_docs',
      client_name: 'audit-test',
      client_version: '9.9.9',
      method: 'tools/call',
    });
    expect(ok!.arguments).toEqual({ query: 'token rotation' });
    expect(ok!.result_summary).toEqual({ hits_count: 0, count: 0, truncated: false });
  }, 120_000);
});

describe('tamper evidence', () => {
  async function fill(n: number) {
    const token = await issueTestToken(db.sql, devKnowledgeServer);
    const server = await startTestServer(devKnowledgeServer, { sql: db.sql });
    const k = client(server.url, token);
    await k.connect();
    for (let i = 0; i < n; i++)
      await k.c.callTool({ name: 'search_docs', arguments: { query: `query number ${i}` } });
    await k.c.close();
    await server.close();
  }

  it('refuses UPDATE, DELETE and TRUNCATE', async () => {
    await fill(2);
    await expect(db.sql`update audit_events set outcome = 'ok'`).rejects.toThrow(
      /append-only: UPDATE refused/,
    );
    await expect(db.sql`delete from audit_events`).rejects.toThrow(/append-only: DELETE refused/);
    await expect(db.sql`truncate audit_events`).rejects.toThrow(/append-only: TRUNCATE refused/);
  });

  it('names the position of a changed event and of a removed one', async () => {
    await fill(6);
    expect((await verifyChains(db.sql))[0]!.break).toBeNull();
    // The database owner can switch the trigger off; the hash chain still tells.
    await db.sql`alter table audit_events disable trigger audit_events_append_only_row`;
    await db.sql`update audit_events set arguments = '{"query":"something harmless"}' where server = 'dev-knowledge' and chain_seq = 4`;
    const [changed] = await verifyChains(db.sql);
    expect(changed!.break).toMatchObject({
      server: 'dev-knowledge',
      chainSeq: 4,
      reason: 'event content does not match its hash (changed)',
    });

    await db.sql`update audit_events set arguments = '{"query":"query number 3"}' where server = 'dev-knowledge' and chain_seq = 4`;
    expect((await verifyChains(db.sql))[0]!.break).toBeNull();
    await db.sql`delete from audit_events where server = 'dev-knowledge' and chain_seq = 2`;
    const [removed] = await verifyChains(db.sql);
    expect(removed!.break).toMatchObject({
      chainSeq: 2,
      seq: null,
      reason: 'event at chain position 2 is missing (next present is 3)',
    });
  });
});

describe('secrets', () => {
  it('never stores or logs a field marked secret, nor the token', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'trace' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    const def = createServer({
      name: 'vault',
      version: '1.0.0',
      description: 'Test server with a secret field.',
      tools: [
        defineTool({
          name: 'store_iban',
          title: 'Store IBAN',
          description: 'Stores an IBAN.',
          scope: 'vault:write',
          input: z.object({
            owner: z.string(),
            // Derived from a marked schema, nested in arrays and unions: all must stay secret.
            iban: secret(z.string()).min(10),
            cards: z.array(z.object({ pan: secret(z.string()) })).optional(),
            pin: z.union([secret(z.string().regex(/^\d{4}$/)), z.number()]).optional(),
          }),
          annotations: {
            readOnlyHint: false,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
          handler: async ({ owner }, ctx) => {
            ctx.logger.info({ owner }, 'stored');
            return `stored for ${owner}`;
          },
        }),
      ],
    });
    const token = await issueTestToken(db.sql, def);
    const server = await startTestServer(def, { sql: db.sql, logger });
    const k = client(server.url, token);
    await k.connect();
    const iban = 'DE89370400440532013000';
    const call = (args: Record<string, unknown>, name = 'store_iban') =>
      k.c.callTool({ name, arguments: args });
    expect(
      (await call({ owner: 'Ana', iban, cards: [{ pan: 'PAN4111111111111111' }], pin: '4711' })).isError,
    ).toBeFalsy();
    const invalid = await call({ owner: 'Ana', iban: 'SHORTSEC' });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toContain('iban: got \\"(secret value, not shown)\\"');
    await expect(call({ iban: 'TYPOSECRET-123456' }, 'store_ibna')).rejects.toMatchObject({ code: -32602 });
    await k.c.close();
    await server.close();
    const dump = await db.sql<
      { text: string }[]
    >`select string_agg(to_jsonb(a)::text, ' ') as text from audit_events a`;
    for (const value of [iban, 'SHORTSEC', 'TYPOSECRET', 'PAN4111', '4711'])
      expect(dump[0]!.text).not.toContain(value);
    const hash = expect.stringMatching(/^sha256:[0-9a-f]{64}$/);
    const [ok] = await db.sql`select arguments from audit_events where outcome = 'ok'`;
    expect(ok!.arguments).toEqual({ owner: 'Ana', iban: hash, cards: [{ pan: hash }], pin: hash });
    const [unknown] =
      await db.sql`select arguments, result_summary from audit_events where outcome = 'unknown_tool'`;
    expect(unknown).toEqual({ arguments: null, result_summary: { argument_names: ['iban'] } });
    const log = lines.join('');
    expect(log).toContain('stored');
    for (const value of [iban, 'SHORTSEC', 'TYPOSECRET', 'PAN4111']) expect(log).not.toContain(value);
    expect(log).not.toContain(token.split('_').at(-1)!);
  });
});

describe('refusals', () => {
  it('audits 401, 403 (origin, scope) and 413 with their reasons', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer);
    const narrow = await issueTestToken(db.sql, devKnowledgeServer, { scopes: ['other:read'] });
    const server = await startTestServer(devKnowledgeServer, { sql: db.sql, maxBodyBytes: 2048 });
    const post = (headers: Record<string, string>, body: string) =>
      fetch(server.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body,
      });
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search_docs', arguments: { query: 'x y' } },
    });
    expect((await post({}, call)).status).toBe(401);
    expect(
      (await post({ authorization: `Bearer ${token}`, origin: 'https://evil.example' }, call)).status,
    ).toBe(403);
    const scoped = await post({ authorization: `Bearer ${narrow}` }, call);
    expect(scoped.status).toBe(403);
    expect(scoped.headers.get('www-authenticate')).toBe(
      'Bearer realm="dev-knowledge", error="insufficient_scope", scope="docs:read", error_description="The token lacks the scope docs:read"',
    );
    expect(
      (await post({ authorization: `Bearer ${token}` }, JSON.stringify({ pad: 'x'.repeat(5000) }))).status,
    ).toBe(413);
    await server.close();
    const rows = await db.sql<{ outcome: string; reason: string; status: number; tool: string | null }[]>`
      select outcome, result_summary->>'reason' as reason, (result_summary->>'status')::int as status, tool
      from audit_events order by seq`;
    expect(rows).toEqual([
      { outcome: 'unauthorized', reason: 'missing', status: 401, tool: null },
      { outcome: 'forbidden', reason: 'origin', status: 403, tool: null },
      { outcome: 'forbidden', reason: 'scope', status: 403, tool: 'search_docs' },
      { outcome: 'payload_too_large', reason: 'body', status: 413, tool: null },
    ]);
  });
});

describe('when the audit log cannot be written', () => {
  it('refuses a write tool before it runs and withholds a read tool’s result', async () => {
    let ran = 0;
    const def = createServer({
      name: 'fragile',
      version: '1.0.0',
      description: 'Test server.',
      tools: [
        defineTool({
          name: 'change_thing',
          title: 'Change thing',
          description: 'Changes.',
          scope: 't:write',
          input: z.object({}),
          annotations: {
            readOnlyHint: false,
            destructiveHint: true,
            idempotentHint: false,
            openWorldHint: false,
          },
          handler: async () => {
            ran++;
            return 'changed';
          },
        }),
        defineTool({
          name: 'read_thing',
          title: 'Read thing',
          description: 'Reads.',
          scope: 't:read',
          input: z.object({}),
          annotations: {
            readOnlyHint: true,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false,
          },
          handler: async () => 'the thing',
        }),
      ],
    });
    const token = await issueTestToken(db.sql, def);
    const role = `bh_noaudit_${Math.random().toString(36).slice(2, 8)}`;
    await db.sql.unsafe(`create role ${role} login password 'pw-${role}'`);
    await db.sql.unsafe(
      `grant select, update on all tables in schema public to ${role}; grant insert on bulkhead_rate_limits to ${role}`,
    );
    const url = new URL(db.url);
    url.username = role;
    url.password = `pw-${role}`;
    const limited = createSql(url.toString(), { max: 4 });
    const server = await startTestServer(def, { sql: limited });
    try {
      const k = client(server.url, token);
      await k.connect();
      const write = await k.c.callTool({ name: 'change_thing', arguments: {} });
      expect(write).toMatchObject({
        isError: true,
        content: [
          {
            type: 'text',
            text: 'The audit log is unavailable, so this action was not carried out. Nothing changed; try again later.',
          },
        ],
      });
      expect(ran).toBe(0);
      const read = await k.c.callTool({ name: 'read_thing', arguments: {} });
      expect(read.isError).toBe(true);
      expect(JSON.stringify(read.content)).not.toContain('the thing');
      await k.c.close();
    } finally {
      await server.close();
      await limited.end();
      await db.sql.unsafe(`drop owned by ${role}; drop role ${role}`);
    }
  });
});
