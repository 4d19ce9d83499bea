import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { mcpUpstreamManifestSchema } from '@bulkhead/deployables';
import { expect, it } from 'vitest';
import { repoRoot } from '../root.ts';
import { runCli } from '../run-cli.ts';
import { mcpManifest } from './mcp.ts';
import { exampleArgs } from './mcp-templates.ts';

const fromCore = createRequire(new URL('../../../core/package.json', import.meta.url));
const MEMORY = join(
  dirname(fromCore.resolve('@modelcontextprotocol/server-memory/package.json')),
  'dist',
  'index.js',
);
const env = { PATH: process.env.PATH };

it('--from-mcp alone lists the upstream tools, read or gated, with their hints and the linter’s findings', async () => {
  const source = `${process.execPath} ${MEMORY}`;
  const run = await runCli(['new', 'server', '--from-mcp', source], env);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  const lines = run.stdout.trim().split('\n');
  expect(lines[0]).toBe(`${source}: 9 tools.`);
  expect(lines[1]).toBe(
    '  create_entities      gated  readOnly=false destructive=false idempotent=false openWorld=false  Create Entities',
  );
  expect(lines[2]).toBe(
    '                         lint description-returns (description): the description does not say what comes back (no "Returns …")',
  );
  expect(lines).toContain(
    '  read_graph           read   readOnly=true destructive=false idempotent=true openWorld=false  Read Graph',
  );

  const json = await runCli(['new', 'server', '--from-mcp', source, '--json'], env);
  const rows = JSON.parse(json.stdout) as { name: string; gated: boolean; findings: unknown[] }[];
  expect(rows.map((r) => [r.name, r.gated])).toEqual([
    ['create_entities', true],
    ['create_relations', true],
    ['add_observations', true],
    ['delete_entities', true],
    ['delete_observations', true],
    ['delete_relations', true],
    ['read_graph', false],
    ['search_nodes', false],
    ['open_nodes', false],
  ]);
});

it('--from-mcp names an upstream it cannot reach, and refuses a header for a command', async () => {
  const down = await runCli(['new', 'server', '--from-mcp', 'http://127.0.0.1:9/mcp'], env);
  expect(down.code).toBe(1);
  expect(down.stderr).toMatch(/could not reach 127\.0\.0\.1:9/);
  const header = await runCli(
    ['new', 'server', '--from-mcp', 'node x.js', '--header', 'Authorization=X'],
    env,
  );
  expect(header.code).toBe(2);
  expect(header.stderr).toContain('--header is sent only to a URL given with --from-mcp');
});

it('--tool refuses a tool the upstream does not list, naming those it does, and writes nothing', async () => {
  const source = `${process.execPath} ${MEMORY}`;
  const run = await runCli(
    ['new', 'server', 'graph-front', '--from-mcp', source, '--tool', 'read_graph', '--tool', 'read_grap'],
    env,
  );
  expect(run.code).toBe(2);
  expect(run.stderr).toContain(
    '--tool: the upstream lists no tool "read_grap"; its tools: create_entities, create_relations, add_observations, delete_entities, delete_observations, delete_relations, read_graph, search_nodes, open_nodes',
  );
  expect(existsSync(join(repoRoot, 'servers', 'graph-front'))).toBe(false);
});

it('--tool refuses a folder that exists before it starts the upstream, and needs --from-mcp', async () => {
  const taken = await runCli(
    ['new', 'server', 'ops', '--from-mcp', 'http://127.0.0.1:9/mcp', '--tool', 'read_graph'],
    env,
  );
  expect(taken.code).toBe(1);
  expect(taken.stderr).toContain(
    'servers/ops exists already: choose another name, or remove the folder first',
  );
  const alone = await runCli(['new', 'server', 'graph-front', '--tool', 'read_graph'], env);
  expect(alone.code).toBe(2);
  expect(alone.stderr).toContain(
    '--tool chooses from an MCP server: give it with --from-mcp <command or URL>',
  );
});

it('declares the upstream by its command, or its URL and the variable its header comes from, never a value', () => {
  const http = mcpManifest('https://files.example.com/mcp', 'Authorization=FILES_TOKEN', 'files');
  const stdio = mcpManifest('npx -y @modelcontextprotocol/server-filesystem /srv/shared', undefined, 'files');
  expect([http, stdio]).toEqual([
    {
      name: 'files',
      url: 'https://files.example.com/mcp',
      header: { name: 'Authorization', env: 'FILES_TOKEN' },
    },
    { name: 'files', command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/shared'] },
  ]);
  // The server reads them through the manifest's one schema.
  expect([http, stdio].map((m) => mcpUpstreamManifestSchema.safeParse(m).success)).toEqual([true, true]);
});

it('calls each pinned tool in its test with the required arguments and those with a default, in schema order', () => {
  const args = exampleArgs({
    type: 'object',
    properties: {
      path: { type: 'string' },
      head: { type: 'number' },
      mode: { enum: ['lines', 'bytes'] },
      tail: { type: 'integer', default: 5 },
      follow: { type: 'boolean' },
      depth: { type: ['integer', 'null'], minimum: 2 },
    },
    required: ['path', 'mode', 'follow', 'depth'],
  });
  expect(args).toEqual({ path: 'example', mode: 'lines', tail: 5, follow: false, depth: 2 });
});
