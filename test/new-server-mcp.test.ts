import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { discoverDeployables } from '@bulkhead/deployables';
import { afterAll, expect, it } from 'vitest';
import { root } from './helpers.ts';
import { copyRepository, outputOf, type RepoCopy } from './repo-copy.ts';

// The "done when" for `--from-mcp`: in a copy of this repository, a server in front of
// @modelcontextprotocol/server-everything (over stdio, one read tool and one it does not mark read-only)
// installs, typechecks, lints and passes its own tests at once: the read forwarded to the real upstream
// through a real MCP client over HTTP, the other gated, waiting for a person; and the cross-server tests
// take it in, its probe answered by the real upstream. Slow by nature (an install,
// a typecheck, the upstream started by each test file): a few minutes.

const NAME = 'everything-front';
/** The port `bulkhead new server` gives it: the highest of servers/ plus one. */
const PORT = Math.max(...discoverDeployables(root).map((d) => d.port)) + 1;
let repo: RepoCopy | undefined;

afterAll(async () => {
  await repo?.remove();
});

it('bulkhead new server --from-mcp … --tool …: installed, typechecked, linted and tested against the real upstream', async () => {
  repo = await copyRepository('bulkhead-new-mcp-server-');
  const { dir, run } = repo;
  const install = await run('pnpm', ['install', '--prefer-offline', '--frozen-lockfile']);
  expect(install.code, outputOf(install)).toBe(0);

  // The everything server as installed in the copy, run over stdio by Node.
  const everything = join(
    dir,
    'packages/core/node_modules/@modelcontextprotocol/server-everything/dist/index.js',
  );
  const created = await run('pnpm', [
    'bulkhead',
    'new',
    'server',
    NAME,
    '--from-mcp',
    `node ${everything} stdio`,
    '--tool',
    'echo',
    '--tool',
    'toggle-simulated-logging',
  ]);
  expect(created.code, outputOf(created)).toBe(0);
  expect(created.stdout).toContain(
    `Created servers/${NAME}: port ${PORT}, scopes approvals:read, ${NAME}:read, ${NAME}:write, not customer-bound.`,
  );
  expect(created.stdout).toContain('  toggle_simulated_logging  gated, a person approves each call');

  // The manifest names the upstream's command and the pin file; the pins are what the upstream listed.
  const manifest = JSON.parse(await readFile(join(dir, 'servers', NAME, 'package.json'), 'utf8')) as {
    bulkhead: { mcpUpstream: unknown; scopes: string[]; gated: boolean };
  };
  expect(manifest.bulkhead.mcpUpstream).toEqual({ name: NAME, command: 'node', args: [everything, 'stdio'] });
  const pins = JSON.parse(await readFile(join(dir, 'servers', NAME, 'pins.json'), 'utf8')) as {
    tools: { name: string; sha256: string }[];
    others: string[];
  };
  expect(pins.tools.map((t) => t.name)).toEqual(['echo', 'toggle-simulated-logging']);
  expect(pins.others).toContain('get-sum');

  const relinked = await run('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile']);
  expect(relinked.code, outputOf(relinked)).toBe(0);
  const typecheck = await run('pnpm', ['--filter', NAME, 'typecheck']);
  expect(typecheck.code, outputOf(typecheck)).toBe(0);
  const eslint = await run('pnpm', ['exec', 'eslint', `servers/${NAME}`]);
  expect(eslint.code, outputOf(eslint)).toBe(0);
  const changed = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], {
    cwd: dir,
    encoding: 'utf8',
  })
    .stdout.split('\n')
    .filter(Boolean)
    .map((line) => line.slice(3));
  const prettier = await run('pnpm', ['exec', 'prettier', '--check', '--ignore-unknown', ...changed]);
  expect(prettier.code, outputOf(prettier)).toBe(0);

  // Its own tests, and the cross-server ones that find it by its manifest (token matrix with its probe
  // through the real upstream, roles, README figures), on this run's PostgreSQL.
  const tests = await run(
    'pnpm',
    [
      'vitest',
      'run',
      '--reporter=verbose',
      `servers/${NAME}`,
      'test/manifests.test.ts',
      'test/tokens.test.ts',
      'test/roles.test.ts',
      'test/readme-figures.test.ts',
    ],
    { DATABASE_URL: process.env.BULKHEAD_TEST_ADMIN_URL },
  );
  expect(tests.code, outputOf(tests)).toBe(0);
  expect(tests.stdout).toMatch(/Test Files +7 passed \(7\)/);
  expect(tests.stdout).toContain(
    `✓ test/tokens.test.ts > the token matrix on '${NAME}' > accepts its own token`,
  );
  expect(tests.stdout).toContain(
    `✓ servers/${NAME}/src/tools/echo.test.ts > echo > is forwarded to the upstream at once, and what comes back is marked untrusted`,
  );
  expect(tests.stdout).toContain(
    `✓ servers/${NAME}/src/tools/toggle-simulated-logging.test.ts > toggle_simulated_logging > files a request for approval and sends nothing to the upstream before a person approves`,
  );

  // `bulkhead pins update` reads the pin file as written and, the upstream unchanged, writes it back byte for byte.
  const pinsPath = join(dir, 'servers', NAME, 'pins.json');
  const pinned = await readFile(pinsPath, 'utf8');
  const update = await run('pnpm', ['bulkhead', 'pins', 'update', NAME]);
  expect(update.code, outputOf(update)).toBe(0);
  expect(update.stdout).toContain(`already pins what the ${NAME} server lists; nothing changed.`);
  expect(await readFile(pinsPath, 'utf8')).toBe(pinned);

  // The deployment checks that need no container engine: the compose file and every Kubernetes overlay.
  const compose = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-compose.ts']);
  expect(compose.code, outputOf(compose)).toBe(0);
  expect(compose.stdout).toContain(`ok   compose: ${NAME}: a service`);
  const k8s = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-k8s.ts']);
  expect(k8s.code, outputOf(k8s)).toBe(0);
}, 900_000);
