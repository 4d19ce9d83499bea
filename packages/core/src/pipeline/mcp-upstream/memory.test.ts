import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, vi, expect, it } from 'vitest';
import { startApprovalExecutor, type ApprovalExecutor } from '../../approvals/executor.ts';
import { createServer } from '../../serve/create-server.ts';
import {
  callFlat,
  connectTestClient,
  issueTestToken,
  startTestServer,
  testApprover,
  type TestServer,
} from '../../testing/index.ts';
import { livePins, npmServerEntry, pinnedTools, stdioUpstream } from '../../testing/mcp-upstreams.ts';
import { createMcpUpstreams, type McpUpstreams } from './upstreams.ts';

// Each test starts real MCP servers (Node children); on a busy machine that takes its time.
vi.setConfig({ testTimeout: 60_000 });

let db: TestDatabase;
let folder: string;
let server: TestServer;
let upstreams: McpUpstreams;
let executor: ApprovalExecutor;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  folder = await mkdtemp(join(tmpdir(), 'bulkhead-memory-'));
  const config = stdioUpstream('memory', npmServerEntry('server-memory'), [], {
    MEMORY_FILE_PATH: join(folder, 'memory.jsonl'),
  });
  const pins = await livePins(config, ['read_graph', 'search_nodes', 'create_entities']);
  const def = createServer({
    name: 'memory-bounded',
    version: '1.0.0',
    description: 'A knowledge graph, through the memory server.',
    tools: pinnedTools('memory', pins),
  });
  upstreams = createMcpUpstreams([config], pino({ level: 'silent' }));
  server = await startTestServer(def, { db, mcpUpstreams: upstreams });
  token = await issueTestToken(db.sql, def);
  executor = startApprovalExecutor(def, {
    sql: server.sql,
    logger: pino({ level: 'silent' }),
    mcpUpstreams: upstreams,
    sweepIntervalMs: 60_000,
  });
  await executor.ready;
}, 60_000);
afterAll(async () => {
  await executor.stop();
  await server.close();
  await upstreams.close();
  await rm(folder, { recursive: true, force: true });
  await db.drop();
});

it('reads the graph at once and adds to it only after approval', async () => {
  const client = await connectTestClient(server.url, token);
  const empty = await callFlat(client, 'read_graph', {});
  expect(empty.isError).toBe(false);
  expect(empty.text).toContain('upstream memory, tool read_graph');
  expect(empty.text).not.toContain('Ada Lovelace');

  const entity = { name: 'Ada Lovelace', entityType: 'person', observations: ['wrote the first program'] };
  const asked = await callFlat(client, 'create_entities', { entities: [entity] });
  expect(asked.structured).toMatchObject({ status: 'pending_approval' });
  expect((await callFlat(client, 'search_nodes', { query: 'Lovelace' })).text).not.toContain('Ada Lovelace');

  await (await testApprover(db)).decide((asked.structured as { approval_id: string }).approval_id, 'approve');
  await executor.drain();
  const found = await callFlat(client, 'search_nodes', { query: 'Lovelace' });
  await client.close();
  expect(found.isError).toBe(false);
  expect(found.text).toMatch(/Ada Lovelace/);
  expect(found.text).toContain('wrote the first program');
});

it('refuses arguments outside the pinned schema without reaching the upstream', async () => {
  const client = await connectTestClient(server.url, token);
  const bad = await callFlat(client, 'search_nodes', { query: 42 });
  await client.close();
  expect(bad.isError).toBe(true);
  expect(bad.text).toMatch(/^Invalid arguments/);
});
