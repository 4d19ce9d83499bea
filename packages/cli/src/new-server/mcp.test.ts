import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

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
