import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createHttpApp, createServer, defineTool } from '../index.ts';
import { connectTestClient, issueTestToken, startTestServer, type TestServer } from '../testing/index.ts';

const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
const def = createServer({
  name: 'metrics-test',
  version: '1.0.0',
  description: 'Metrics.',
  tools: [
    defineTool({
      name: 'echo_text',
      title: 'Echo text',
      description: 'Returns text.',
      scope: 'echo:read',
      input: z.object({ text: z.string().max(20) }),
      annotations: ro,
      handler: async ({ text }) => text,
    }),
  ],
});

let db: TestDatabase;
let server: TestServer;
beforeAll(async () => {
  db = await createTestDatabase();
  server = await startTestServer(def, { db, metricsToken: 'm'.repeat(24) });
});
afterAll(async () => {
  await server.close();
  await db.drop();
});

/** One sample of a scraped metric, by its name and labels. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const line = text
    .split('\n')
    .find((l) =>
      l.startsWith(`${name}{`) || l.startsWith(`${name} `)
        ? Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`))
        : false,
    );
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

it('serves Prometheus metrics on loopback: requests by tool and outcome, latency, refusals, token cache, backlog, pool', async () => {
  const token = await issueTestToken(db.sql, def);
  const client = await connectTestClient(server.url, token);
  for (let i = 0; i < 3; i++) await client.callTool({ name: 'echo_text', arguments: { text: `hi ${i}` } });
  await client.callTool({ name: 'echo_text', arguments: { text: 'x'.repeat(30) } });
  await client.callTool({ name: 'nope', arguments: {} }).catch(() => {});
  await client.close();
  await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });

  const res = await fetch(new URL('/metrics', server.url));
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const text = await res.text();
  expect(
    sample(text, 'bulkhead_requests_total', { server: 'metrics-test', tool: 'echo_text', outcome: 'ok' }),
  ).toBe(3);
  expect(sample(text, 'bulkhead_requests_total', { tool: 'echo_text', outcome: 'invalid_arguments' })).toBe(
    1,
  );
  expect(sample(text, 'bulkhead_requests_total', { tool: 'nope', outcome: 'unknown_tool' })).toBe(1);
  expect(sample(text, 'bulkhead_refusals_total', { outcome: 'unauthorized', reason: 'missing' })).toBe(1);
  expect(sample(text, 'bulkhead_request_duration_seconds_count', { tool: 'echo_text' })).toBe(4);
  const operations = (labels: Record<string, string>) =>
    sample(text, 'mcp_server_operation_duration_seconds_count', { mcp_method_name: 'tools/call', ...labels });
  expect(operations({ gen_ai_tool_name: 'echo_text', error_type: '' })).toBe(3);
  expect(operations({ gen_ai_tool_name: 'echo_text', error_type: 'invalid_arguments' })).toBe(1);
  expect(operations({ gen_ai_tool_name: '', error_type: 'unknown_tool' })).toBe(1);
  expect(sample(text, 'bulkhead_token_cache_misses_total')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'bulkhead_token_cache_hits_total')).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'bulkhead_audit_unsealed_events')).toBeGreaterThanOrEqual(6);
  expect(sample(text, 'bulkhead_audit_unsealed_age_seconds')).toBeGreaterThanOrEqual(0);
  expect(sample(text, 'bulkhead_db_pool_max')).toBe(10);
  expect(sample(text, 'bulkhead_audit_held_events')).toBe(0);
  expect(sample(text, 'bulkhead_db_up')).toBe(1);
  expect(sample(text, 'bulkhead_audit_dropped_events')).toBe(0);
  expect(text).toMatch(/^bulkhead_db_connections\{state="(idle|active)",server="metrics-test"\} [1-9]/m);
  expect(sample(text, 'bulkhead_process_resident_memory_bytes')).toBeGreaterThan(0);
  expect(sample(text, 'bulkhead_audit_unsealed_overdue')).toBe(0);
});

it('says when the oldest unsealed audit event is overdue (the sealer stopped), in the same scrape', async () => {
  // What a stopped sealer leaves: an event unsealed for an hour (dated back by the owner).
  await db.sql.begin(async (tx) => {
    await tx`alter table audit_events disable trigger audit_events_append_only_row`;
    await tx`update audit_events set at = now() - interval '1 hour' where seq = (select min(seq) from audit_events)`;
    await tx`alter table audit_events enable trigger audit_events_append_only_row`;
  });
  const text = await (await fetch(new URL('/metrics', server.url))).text();
  expect(sample(text, 'bulkhead_audit_unsealed_overdue')).toBe(1);
  expect(sample(text, 'bulkhead_audit_unsealed_age_seconds')).toBeGreaterThanOrEqual(3600);
});

it('answers 404 to a scraper off loopback without the metrics token, and 200 with it', async () => {
  const { app, close } = createHttpApp(def, {
    sql: (await db.as(def.name)).sql,
    logger: pino({ level: 'silent' }),
    publicUrl: 'http://127.0.0.1',
    metricsToken: 'm'.repeat(24),
  });
  // app.request has no socket: the source is not loopback.
  expect((await app.request('/metrics')).status).toBe(404);
  expect(
    (await app.request('/metrics', { headers: { authorization: `Bearer ${'x'.repeat(24)}` } })).status,
  ).toBe(404);
  const ok = await app.request('/metrics', { headers: { authorization: `Bearer ${'m'.repeat(24)}` } });
  expect(ok.status).toBe(200);
  expect(await ok.text()).toContain('# TYPE bulkhead_requests_total counter');
  await close();
});
