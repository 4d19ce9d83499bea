import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import pino from 'pino';
import { afterAll, beforeAll, vi, expect, it } from 'vitest';
import { startApprovalExecutor, type ApprovalExecutor } from '../../approvals/executor.ts';
import { approvalDeliveries } from '../../approvals/store.ts';
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
import type { ServerDefinition } from '../tool-definition/server-definition.ts';
import { createMcpUpstreams, type McpUpstreams } from './upstreams.ts';

// Each test starts real MCP servers (Node children); on a busy machine that takes its time.
vi.setConfig({ testTimeout: 60_000 });

let db: TestDatabase;
let folder: string;
let def: ServerDefinition;
let server: TestServer;
let upstreams: McpUpstreams;
let executor: ApprovalExecutor;
let token: string;

beforeAll(async () => {
  db = await createTestDatabase();
  folder = await mkdtemp(join(tmpdir(), 'bulkhead-fs-'));
  await writeFile(join(folder, 'readme.txt'), 'Kept by the file server.\n');
  const config = stdioUpstream('files', npmServerEntry('server-filesystem'), [folder]);
  const pins = await livePins(config, ['read_text_file', 'list_directory', 'write_file']);
  def = createServer({
    name: 'files-bounded',
    version: '1.0.0',
    description: 'A temporary folder, through the filesystem server.',
    tools: pinnedTools('files', pins),
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

it('gates the tools the upstream does not mark read-only, under the write scope', () => {
  const scopes = Object.fromEntries(def.catalog.tools.map((t) => [t.name, [t.scope, Boolean(t.approval)]]));
  expect(scopes).toEqual({
    read_text_file: ['files:read', false],
    list_directory: ['files:read', false],
    write_file: ['files:write', true],
    get_approval_status: ['approvals:read', false],
  });
});

it('runs reads at once, their text marked untrusted', async () => {
  const client = await connectTestClient(server.url, token);
  const read = await callFlat(client, 'read_text_file', { path: join(folder, 'readme.txt') });
  const list = await callFlat(client, 'list_directory', { path: folder });
  await client.close();
  expect(read.isError).toBe(false);
  expect(read.text).toMatch(
    /source="upstream files, tool read_text_file">Kept by the file server\.\n<\/untrusted-/,
  );
  expect(list.text).toContain('[FILE] readme.txt');
});

it('writes only after approval, exactly once, and never again when a delivery is repeated', async () => {
  const target = join(folder, 'note.txt');
  const client = await connectTestClient(server.url, token);
  const asked = await callFlat(client, 'write_file', { path: target, content: 'approved text' });
  expect(asked.structured).toMatchObject({ status: 'pending_approval' });
  const id = (asked.structured as { approval_id: string }).approval_id;
  await expect(readFile(target, 'utf8')).rejects.toThrow(/ENOENT/);

  const approver = await testApprover(db);
  const decided = await approver.decide(id, 'approve');
  expect(decided.preview).toBe(
    `Call "write_file" on the upstream MCP server "files" with the arguments ${JSON.stringify(JSON.stringify({ path: target, content: 'approved text' }))}. It is sent at most once: if its delivery fails, the outcome is reported as unknown and it is not sent again.`,
  );
  await executor.drain();
  expect(await readFile(target, 'utf8')).toBe('approved text');
  const [delivered] = await approvalDeliveries(db.sql, id);
  expect(delivered).toMatchObject({
    kind: 'mcp_upstream',
    status: 'delivered',
    attempts: 1,
    lastError: null,
  });
  const status = await callFlat(client, 'get_approval_status', { approval_id: id });
  expect(status.structured).toMatchObject({
    status: 'executed',
    result: { status: 'sending', outbox_id: delivered!.id },
  });

  // A delivery whose lease lapsed comes round again: it is not sent a second time, and the approver reads why.
  await rm(target);
  await db.sql`update bulkhead_outbox set status = 'pending', next_attempt_at = now() where id = ${delivered!.id}`;
  await executor.drain();
  await expect(readFile(target, 'utf8')).rejects.toThrow(/ENOENT/);
  const [again] = await approvalDeliveries(db.sql, id);
  expect(again).toMatchObject({ status: 'failed', attempts: 2 });
  expect(again!.lastError).toMatch(
    /^outcome unknown: an earlier attempt to call write_file on the upstream MCP server files was interrupted/,
  );
  await client.close();
});

it('reports an approved write whose upstream is down as not sent, and does not retry it', async () => {
  const target = join(folder, 'late.txt');
  const client = await connectTestClient(server.url, token);
  const asked = await callFlat(client, 'write_file', { path: target, content: 'too late' });
  await client.close();
  const id = (asked.structured as { approval_id: string }).approval_id;
  await upstreams.close();
  await (await testApprover(db)).decide(id, 'approve');
  await executor.drain();
  const [row] = await approvalDeliveries(db.sql, id);
  expect(row).toMatchObject({ status: 'failed', attempts: 1 });
  expect(row!.lastError).toBe(
    'not sent: files was not reachable, so write_file on the upstream MCP server files was not sent, and will not be retried',
  );
  await expect(readFile(target, 'utf8')).rejects.toThrow(/ENOENT/);
});
