import { Writable } from 'node:stream';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { sealLog, verifyLog } from '@bulkhead/audit';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { createServer, defineTool, secret, type ServerDefinition } from '@bulkhead/core';
import { startApprovalExecutor } from '@bulkhead/core/operator';
import { issueTestToken, startTestServer, testApprover } from '@bulkhead/core/testing';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { devKnowledgeServer } from '../servers/dev-knowledge/src/server.ts';
import { spawnServer, type ServerProcess } from './helpers.ts';

const KEY = 'a'.repeat(43);
let db: TestDatabase;
beforeEach(async () => {
  db = await createTestDatabase();
});
afterEach(async () => {
  await db.drop();
});

function client(url: URL, token: string, info = { name: 'audit-test', version: '9.9.9' }) {
  const c = new Client(info, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
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

const write = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };

/**
 * A server whose tools change a table: a plain write, a gated one, and a read. A marker in the
 * arguments lets a test make the audit insert of that very call fail inside the database — refused
 * by a trigger, or with the connection dropped under it.
 */
const effects = createServer({
  name: 'effects',
  version: '1.0.0',
  description: 'Writes effects, for the fault tests.',
  tools: [
    defineTool({
      name: 'record_effect',
      title: 'Record effect',
      description: 'Writes one row.',
      scope: 'effects:write',
      input: z.object({ label: z.string().max(100) }),
      annotations: write,
      handler: async ({ label }, ctx) => {
        await ctx.sql`insert into effects (label) values (${label})`;
        return { recorded: label };
      },
    }),
    defineTool({
      name: 'record_approved_effect',
      title: 'Record approved effect',
      description: 'Writes one row once approved.',
      scope: 'effects:write',
      input: z.object({ label: z.string().max(100) }),
      annotations: write,
      approval: { preview: ({ label }) => `Record "${label}".` },
      handler: async ({ label }, ctx) => {
        await ctx.sql`insert into effects (label) values (${label})`;
        return { recorded: label };
      },
    }),
    defineTool({
      name: 'read_effects',
      title: 'Read effects',
      description: 'Counts rows.',
      scope: 'effects:read',
      input: z.object({ label: z.string().max(100).optional() }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      handler: async (_args, ctx) => {
        const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from effects`;
        return { count: row!.n };
      },
    }),
  ],
});

async function withEffectsServer(
  work: (
    call: (name: string, args: Record<string, unknown>) => Promise<{ isError: boolean; text: string }>,
    def: ServerDefinition,
  ) => Promise<void>,
) {
  await db.sql`create table effects (label text not null)`;
  const server = await startTestServer(effects, { db });
  await db.sql`grant select, insert on effects to bulkhead_effects`;
  // Fault injection inside the database: the audit insert of a call whose arguments carry a marker fails.
  await db.sql.unsafe(`
    create function inject_audit_fault() returns trigger language plpgsql as $$
    begin
      if new.arguments::text like '%refuse-the-event%' then
        raise exception 'injected: the audit insert is refused';
      end if;
      if new.arguments::text like '%drop-the-connection%' then
        perform pg_terminate_backend(pg_backend_pid());
      end if;
      return new;
    end $$;
    create trigger inject_audit_fault before insert on audit_events for each row execute function inject_audit_fault();`);
  const token = await issueTestToken(db.sql, effects);
  const k = client(server.url, token);
  await k.connect();
  try {
    await work(async (name, args) => {
      const r = await k.c.callTool({ name, arguments: args });
      return {
        isError: r.isError === true,
        text: (r.content as { text: string }[]).map((c) => c.text).join('\n'),
      };
    }, effects);
  } finally {
    await k.c.close();
    await server.close();
  }
}

const labels = async () =>
  (await db.sql<{ label: string }[]>`select label from effects order by label`).map((r) => r.label);
const events = async (label: string) =>
  (
    await db.sql<
      { outcome: string }[]
    >`select outcome from audit_events where arguments->>'label' = ${label} order by seq`
  ).map((r) => r.outcome);

describe('no effect without its event', () => {
  it('a write whose event is refused, or whose connection drops while the event is written, leaves no effect', async () => {
    await withEffectsServer(async (call) => {
      for (const label of ['refuse-the-event', 'drop-the-connection']) {
        const r = await call('record_effect', { label });
        expect(r.isError).toBe(true);
        expect(r.text).toMatch(/Nothing was changed/);
        expect(await labels()).toEqual([]);
        // No event could be written for it either, so the client is told that nothing changed.
        expect(await events(label)).toEqual([]);
      }
      // A gated call files no request without its pending_approval event.
      const gated = await call('record_approved_effect', { label: 'refuse-the-event' });
      expect(gated.isError).toBe(true);
      const [pending] = await db.sql<{ n: number }[]>`select count(*)::int as n from bulkhead_approvals`;
      expect(pending!.n).toBe(0);
      // And everything written with its event commits with it.
      expect((await call('record_effect', { label: 'kept' })).isError).toBe(false);
      expect(await labels()).toEqual(['kept']);
      expect(await events('kept')).toEqual(['ok']);
    });
  });

  it('an approved action whose execute event cannot be written does not run, and runs once when it can', async () => {
    await withEffectsServer(async (call) => {
      const filed = await call('record_approved_effect', { label: 'refuse-the-event' });
      expect(filed.isError).toBe(true);
      // File it under a label that passes, then change nothing but make its execute event fail:
      const ok = await call('record_approved_effect', { label: 'approved once' });
      const id = /ap_[a-z2-9]{12}/.exec(ok.text)![0];
      await db.sql`drop trigger inject_audit_fault on audit_events`;
      await db.sql.unsafe(`
        create function refuse_execute() returns trigger language plpgsql as $$
        begin
          if new.method = 'approvals/execute' and current_setting('test.refuse', true) is distinct from 'off' then
            raise exception 'injected: the execute event is refused';
          end if;
          return new;
        end $$;
        create trigger refuse_execute before insert on audit_events for each row execute function refuse_execute();`);
      await (await testApprover(db)).decide(id, 'approve');
      const server = (await db.as('effects')).sql;
      const executor = startApprovalExecutor(effects, {
        sql: server,
        logger: pino({ level: 'silent' }),
        sweepIntervalMs: 60_000,
      });
      await executor.ready;
      await executor.drain();
      expect(await labels()).toEqual([]);
      expect((await db.sql`select status from bulkhead_approvals where id = ${id}`)[0]!.status).toBe(
        'approved',
      );
      await db.sql`drop trigger refuse_execute on audit_events`;
      await executor.drain();
      await executor.stop();
      expect(await labels()).toEqual(['approved once']);
      const story = await db.sql<{ method: string; outcome: string }[]>`
        select method, outcome from audit_events where approval_id = ${id} order by seq`;
      expect(story.map((e) => `${e.method} ${e.outcome}`)).toEqual([
        'tools/call pending_approval',
        'approvals/decide approved',
        'approvals/execute executed',
      ]);
    });
  });

  it('any bytes a client sends in any field are stored, and the effect commits with its event', async () => {
    await withEffectsServer(async (_call, def) => {
      const server = await startTestServer(def, { db });
      const token = await issueTestToken(db.sql, def);
      const evil = client(server.url, token, { name: 'evil\u0000client\ud800', version: '\u0000\udfff1.0' });
      await evil.connect();
      const r = await evil.c.callTool({
        name: 'record_effect',
        arguments: { label: 'kept, from an evil client' },
      });
      // An unpaired surrogate in an argument is refused before anything runs, naming the field (and audited).
      const refused = await evil.c.callTool({ name: 'record_effect', arguments: { label: 'lone\ud800' } });
      await evil.c.close();
      await server.close();
      expect(r.isError).toBeFalsy();
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('label');
      const [row] = await db.sql`
        select client_name, client_version, arguments from audit_events where outcome = 'ok' and tool = 'record_effect'`;
      expect(row).toEqual({
        client_name: 'evil\ufffdclient\ufffd',
        client_version: '\ufffd\ufffd1.0',
        arguments: { label: 'kept, from an evil client' },
      });
      expect(await labels()).toEqual(['kept, from an evil client']);
      const [invalid] = await db.sql`
        select arguments, client_name from audit_events where outcome = 'invalid_arguments' and tool = 'record_effect'`;
      expect(invalid).toEqual({ arguments: { label: 'lone\ufffd' }, client_name: 'evil\ufffdclient\ufffd' });
    });
  });
});

describe('the audit log under load', () => {
  it('records exactly one event for each of 1,000 concurrent calls across two server processes, and the sealed log verifies', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer);
    const env = { BULKHEAD_RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'warn' };
    const url = (await db.as('dev-knowledge')).url;
    const servers: ServerProcess[] = await Promise.all([
      spawnServer('dev-knowledge', url, env),
      spawnServer('dev-knowledge', url, env),
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
              headers: {
                authorization: `Bearer ${token}`,
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                'mcp-protocol-version': '2025-11-25',
              },
              body: JSON.stringify({ jsonrpc: '2.0', id: i, method: 'resources/list' }),
            });
            return res.status === 200 ? 'bad_request' : 'bad';
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
      { outcome: 'bad_request', n: 250 },
      { outcome: 'invalid_arguments', n: 250 },
      { outcome: 'ok', n: 250 },
      { outcome: 'unknown_tool', n: 250 },
    ]);
    const [numbers] = await db.sql<{ n: number; distinct: number }[]>`
      select count(*)::int as n, count(distinct seq)::int as distinct from audit_events`;
    expect(numbers).toEqual({ n: 1000, distinct: 1000 });
    await sealLog(db.sql, KEY);
    const report = await verifyLog(db.sql, { key: KEY });
    expect(report.ok).toBe(true);
    expect(report.servers).toEqual([{ server: 'dev-knowledge', sealed: 1000, present: 1000 }]);
    const [ok] = await db.sql`select * from audit_events where outcome = 'ok' limit 1`;
    expect(ok).toMatchObject({
      tool: 'search_docs',
      client_name: 'audit-test',
      client_version: '9.9.9',
      method: 'tools/call',
      db_role: 'bulkhead_dev_knowledge_login',
    });
    expect(ok!.arguments).toEqual({ query: 'token rotation' });
  }, 120_000);
});

describe('hostile requests', () => {
  it('each yields exactly one event and no 5xx, and the sealed log still verifies', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer, { label: 'hostile' });
    const server = await startTestServer(devKnowledgeServer, { db, maxBodyBytes: 1024 * 1024 });
    let deep: unknown = 'bottom';
    for (let i = 0; i < 3000; i++) deep = { d: deep };
    const rpc = (method: string, params?: unknown, id: unknown = 1) =>
      JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    const cases: [string, string][] = [
      ['unknown method', rpc('resources/list')],
      ['approvals/decide over MCP', rpc('approvals/decide', { approval_id: 'ap_aaaaaaaaaaaa' })],
      ['non-object arguments', rpc('tools/call', { name: 'search_docs', arguments: ['x'] })],
      ['numeric tool name', rpc('tools/call', { name: 42, arguments: {} })],
      ['no params', rpc('tools/call')],
      ['null body', 'null'],
      ['string body', '"tools/call"'],
      ['deep arguments', rpc('tools/call', { name: 'search_docs', arguments: { query: deep } })],
      ['long unknown tool name', rpc('tools/call', { name: `x${'y'.repeat(4000)}`, arguments: {} })],
      ['lone surrogate tool name', rpc('tools/call', { name: 'x\ud800', arguments: {} })],
      ['NUL in an argument', rpc('tools/call', { name: 'search_docs', arguments: { query: 'a\u0000b' } })],
      ['batch under 2025-11-25', JSON.stringify([JSON.parse(rpc('tools/list'))])],
    ];
    const statuses: Record<string, number> = {};
    for (const [name, body] of cases) {
      const before = (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`)[0]!.n;
      const res = await fetch(server.url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
        },
        body,
      });
      statuses[name] = res.status;
      const text = await res.text();
      expect(text).not.toMatch(/at .*\.ts:\d+|select |insert into/i);
      await new Promise((r) => setTimeout(r, 20));
      const after = (await db.sql<{ n: number }[]>`select count(*)::int as n from audit_events`)[0]!.n;
      expect({ name, events: after - before }).toEqual({ name, events: 1 });
    }
    expect(Object.values(statuses).every((s) => s < 500)).toBe(true);
    await server.close();
    await sealLog(db.sql, KEY);
    const report = await verifyLog(db.sql, { key: KEY });
    expect(report.breaks).toEqual([]);
    const [tool] = await db.sql<{ n: number }[]>`select max(length(tool))::int as n from audit_events`;
    expect(tool!.n).toBeLessThanOrEqual(200);
  });

  it('a flood without a token writes a few events per source and one summary of the rest', async () => {
    const server = await startTestServer(devKnowledgeServer, { db, unauthenticatedEventsPerMinute: 20 });
    const results = await Promise.all(
      Array.from({ length: 300 }, () =>
        fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        }).then((r) => r.status),
      ),
    );
    expect(results.every((s) => s === 401)).toBe(true);
    await server.close();
    const rows = await db.sql<{ method: string; n: number; suppressed: number | null }[]>`
      select method, count(*)::int as n, max((result_summary->>'suppressed')::int) as suppressed
      from audit_events group by method order by method`;
    expect(rows).toEqual([
      { method: 'http', n: 1, suppressed: 280 },
      { method: 'http POST', n: 20, suppressed: null },
    ]);
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
          annotations: { ...write, idempotentHint: true },
          handler: async ({ owner }, ctx) => {
            ctx.logger.info({ owner }, 'stored');
            return `stored for ${owner}`;
          },
        }),
      ],
    });
    const token = await issueTestToken(db.sql, def);
    const server = await startTestServer(def, { db, logger });
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
    for (const value of [iban, 'SHORTSEC', 'TYPOSECRET', 'PAN4111'])
      expect(dump[0]!.text).not.toContain(value);
    // The PIN's four digits may occur inside a random id or hash (a UUID once held `4711`): only the value counts.
    expect(dump[0]!.text).not.toMatch(/(?<![0-9a-z])4711(?![0-9a-z])/i);
    const hash = expect.stringMatching(/^sha256:[0-9a-f]{64}$/);
    const [ok] = await db.sql`select arguments from audit_events where outcome = 'ok'`;
    expect(ok!.arguments).toEqual({ owner: 'Ana', iban: hash, cards: [{ pan: hash }], pin: hash });
    const [unknown] =
      await db.sql`select arguments, result_summary from audit_events where outcome = 'unknown_tool'`;
    expect(unknown).toEqual({ arguments: null, result_summary: { argument_names: ['iban'] } });
    const log = lines.join('');
    expect(log).toContain('stored');
    for (const value of [iban, 'SHORTSEC', 'TYPOSECRET', 'PAN4111']) expect(log).not.toContain(value);
    expect(log).not.toContain(token.slice(-43)); // the secret: base64url, so it may contain `_`
  });
});

describe('refusals', () => {
  it('audits 401, 403 (origin), 413 and an out-of-scope call with their reasons', async () => {
    const token = await issueTestToken(db.sql, devKnowledgeServer);
    const narrow = await issueTestToken(db.sql, devKnowledgeServer, { scopes: ['other:read'] });
    const server = await startTestServer(devKnowledgeServer, { db, maxBodyBytes: 2048 });
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
    const scoped = await post(
      { authorization: `Bearer ${narrow}`, 'mcp-protocol-version': '2025-11-25' },
      call,
    );
    expect(scoped.status).toBe(200);
    expect(await scoped.text()).toContain('Unknown tool: search_docs');
    expect(
      (await post({ authorization: `Bearer ${token}` }, JSON.stringify({ pad: 'x'.repeat(5000) }))).status,
    ).toBe(413);
    await server.close();
    const rows = await db.sql<
      { outcome: string; reason: string | null; status: number | null; tool: string | null }[]
    >`
      select outcome, result_summary->>'reason' as reason, (result_summary->>'status')::int as status, tool
      from audit_events order by seq`;
    expect(rows).toEqual([
      { outcome: 'unauthorized', reason: 'missing', status: 401, tool: null },
      { outcome: 'forbidden', reason: 'origin', status: 403, tool: null },
      { outcome: 'unknown_tool', reason: null, status: null, tool: 'search_docs' },
      { outcome: 'payload_too_large', reason: 'body', status: 413, tool: null },
    ]);
  });
});

describe('when the audit log cannot be written', () => {
  it('keeps nothing a write tool did and withholds a read tool’s result', async () => {
    await withEffectsServer(async (call) => {
      await db.sql`revoke insert on audit_events from bulkhead_effects`;
      const w = await call('record_effect', { label: 'unaudited write' });
      expect(w.isError).toBe(true);
      expect(w.text).toContain('Nothing was changed');
      expect(await labels()).toEqual([]);
      await db.sql`insert into effects (label) values ('secret count')`;
      const r = await call('read_effects', {});
      expect(r.isError).toBe(true);
      expect(r.text).toBe(
        'The audit log could not record this call, so its result is withheld. Nothing was changed; try again in a moment, and if it persists, tell the operator.',
      );
    });
  });
});
