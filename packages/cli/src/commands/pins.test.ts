import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { formatPinFile, pinTool } from '@bulkhead/core';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, vi, expect, it } from 'vitest';
import { listUpstream } from '../mcp-upstream.ts';
import { runCli } from '../run-cli.ts';

// Each test starts real MCP servers (Node children); on a busy machine that takes its time.
vi.setConfig({ testTimeout: 120_000 });

const fromCore = createRequire(new URL('../../../core/package.json', import.meta.url));
const MEMORY = join(
  dirname(fromCore.resolve('@modelcontextprotocol/server-memory/package.json')),
  'dist',
  'index.js',
);

let db: TestDatabase;
let folder: string;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana', PATH: process.env.PATH };
  folder = await mkdtemp(join(tmpdir(), 'bulkhead-pins-'));
  await writeFile(join(folder, 'memory.txt'), join(folder, 'memory.jsonl'));
  const manifest = {
    name: 'memory-front',
    description: 'A knowledge graph, pinned.',
    bulkhead: {
      port: 3990,
      scopes: ['memory:read'],
      mcpUpstream: {
        name: 'memory',
        title: 'the memory server',
        command: process.execPath,
        args: [MEMORY],
        env: { MEMORY_FILE_PATH: { file: 'memory.txt' } },
      },
    },
  };
  await writeFile(join(folder, 'package.json'), JSON.stringify(manifest, null, 2));
}, 60_000);
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
  await db.drop();
});

it('pins update rewrites a stale pin from what the upstream lists now, and names the rest', async () => {
  const live = await listUpstream({
    name: 'memory',
    title: 'the memory server',
    transport: { type: 'stdio', command: process.execPath, args: [MEMORY] },
    secrets: [],
  });
  const readGraph = live.find((t) => t.name === 'read_graph')!;
  const stale = pinTool({ ...readGraph, description: 'Read the graph (an older wording).' });
  await writeFile(
    join(folder, 'pins.json'),
    formatPinFile({ upstream: 'memory', tools: [stale], others: [] }),
  );

  const run = await runCli(['pins', 'update', folder], env);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const lines = run.stdout.trim().split('\n');
  expect(lines[0]).toBe(
    `changed: read_graph (sha256 ${stale.sha256.slice(0, 12)} → ${readGraph.sha256.slice(0, 12)})`,
  );
  expect(lines).toContain('new: create_entities (not served; pin it with --tool)');
  expect(lines.at(-1)).toBe(`Wrote ${join(folder, 'pins.json')}: review the diff before it is deployed.`);
  const written = JSON.parse(await readFile(join(folder, 'pins.json'), 'utf8')) as {
    tools: unknown[];
    others: string[];
  };
  expect(written.tools).toEqual([readGraph]);
  expect(written.others).toEqual(live.map((t) => t.name).filter((n) => n !== 'read_graph'));

  const added = await runCli(['pins', 'update', folder, '--tool', 'search_nodes'], env);
  const searchNodes = live.find((t) => t.name === 'search_nodes')!;
  expect(added.stdout.split('\n')[0]).toBe(
    `pinned: search_nodes (sha256 ${searchNodes.sha256.slice(0, 12)})`,
  );
  const both = JSON.parse(await readFile(join(folder, 'pins.json'), 'utf8')) as {
    tools: { name: string }[];
    others: string[];
  };
  expect(both.tools.map((t) => t.name)).toEqual(['read_graph', 'search_nodes']);
  expect(both.others).not.toContain('search_nodes');
  const unknown = await runCli(['pins', 'update', folder, '--tool', 'drop_table'], env);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('--tool: the upstream lists no tool "drop_table"');

  const again = await runCli(['pins', 'update', folder], env);
  expect(again.stdout.trim().split('\n').at(-1)).toBe(
    `${join(folder, 'pins.json')} already pins what the memory server lists; nothing changed.`,
  );
});

it('pins drift lists what a server recorded, and pins accept accepts it once, audited', async () => {
  const sha = 'a'.repeat(64);
  const definition = {
    name: 'read_graph',
    description: 'Returns the whole graph.',
    inputSchema: { type: 'object' },
  };
  await db.sql`select bulkhead_record_mcp_drift('memory-front', 'memory', 'read_graph', ${sha}, 'changed',
    ${db.sql.json({ ...definition, description: 'Returns the graph.' })}, ${db.sql.json(definition)}, '[]', null)`;
  const listed = await runCli(['pins', 'drift', '--json'], env);
  expect(JSON.parse(listed.stdout)).toEqual([
    expect.objectContaining({
      server: 'memory-front',
      tool: 'read_graph',
      kind: 'changed',
      sha256: sha,
      accepted_by: null,
    }),
  ]);
  const accepted = await runCli(
    ['pins', 'accept', '--server', 'memory-front', '--tool', 'read_graph', '--sha256', sha.slice(0, 12)],
    env,
  );
  expect(accepted.stderr).toBe('');
  expect(accepted.stdout).toBe(
    'Accepted the new definition of read_graph on memory-front: every replica serves it within a second.\n',
  );
  const twice = await runCli(
    ['pins', 'accept', '--server', 'memory-front', '--tool', 'read_graph', '--sha256', sha],
    env,
  );
  expect(twice.stdout).toBe(
    'The new definition of read_graph on memory-front was accepted already; nothing changed.\n',
  );
  const events = await db.sql`select token_label, tool from audit_events where method = 'tools/accept_drift'`;
  expect(events).toEqual([{ token_label: 'ops:ana', tool: 'read_graph' }]);
});
