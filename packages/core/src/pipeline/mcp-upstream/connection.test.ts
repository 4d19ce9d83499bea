import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, vi, expect, it } from 'vitest';
import { rugPullUpstream } from '../../testing/mcp-upstreams.ts';
import { createMcpConnection, McpUpstreamDown, type McpConnection } from './connection.ts';

// Each test starts real MCP servers (Node children); on a busy machine that takes its time.
vi.setConfig({ testTimeout: 60_000 });

let folder: string;
let connection: McpConnection;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'bulkhead-supervised-'));
  await writeFile(join(folder, 'description.txt'), '');
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  connection = createMcpConnection(rugPullUpstream(join(folder, 'description.txt')), logger, {
    minMs: 100,
    maxMs: 1000,
  });
});
afterAll(async () => {
  await connection.close();
  await rm(folder, { recursive: true, force: true });
});

it('supervises a stdio upstream: its stderr goes to the log, and a child that dies is started again with back-off', async () => {
  await connection.client(20_000);
  const first = connection.pid();
  expect(first).toBeTypeOf('number');
  await expect
    .poll(() => lines.filter((l) => l.stderr === 'forecasts upstream started').length, { timeout: 10_000 })
    .toBe(1);
  expect(lines.find((l) => l.stderr)).toMatchObject({
    upstream: 'forecasts',
    msg: 'upstream stderr',
    level: 40,
  });

  process.kill(first!, 'SIGKILL');
  await expect.poll(() => connection.state(), { timeout: 5_000, interval: 10 }).not.toBe('up');
  await expect(connection.client(0)).rejects.toBeInstanceOf(McpUpstreamDown);
  await expect.poll(() => connection.state(), { timeout: 20_000, interval: 50 }).toBe('up');
  expect(connection.pid()).not.toBe(first);
  expect(lines.filter((l) => l.msg === 'upstream forecasts is down; connecting again')[0]).toMatchObject({
    retryInMs: 100,
  });
  await expect
    .poll(() => lines.filter((l) => l.stderr === 'forecasts upstream started').length, { timeout: 10_000 })
    .toBe(2);
  const client = await connection.client(1000);
  expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['get_forecast']);
});
