import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { discoverDeployables } from '@bulkhead/deployables';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, expect, it } from 'vitest';
import { extractAlertmanagerSpec } from './alertmanager-spec.ts';
import { freeOffset, root } from './helpers.ts';
import { childEnv, copyRepository, outputOf, type RepoCopy } from './repo-copy.ts';

// The "done when": in a copy of this repository, `bulkhead new server billing-reports` gives a
// server that installs, typechecks, lints and passes its tests (and the cross-server matrix) at once,
// that `pnpm start` serves with a demo token which calls its example tool while another server's token
// is refused, and whose only changes outside servers/billing-reports/ are the lockfile and the
// generated deployment entries. Slow by nature (an install, a typecheck, a start): about three minutes.
// In the same copy, `--from-openapi` on the Alertmanager 0.25 document (Swagger 2.0, from the Debian
// package's Go source) drafts a server of four tools over it that typechecks, lints and passes its tests.

const NAME = 'billing-reports';
/** The port `bulkhead new server` gives it: the highest of servers/ plus one (alerts gets the next). */
const PORT = Math.max(...discoverDeployables(root).map((d) => d.port)) + 1;
const ALERTS = 'alerts';
/** The Alertmanager operations drafted as tools: two reads, a POST and a DELETE (both gated). */
const ALERT_OPERATIONS = ['getAlerts', 'getSilences', 'postSilences', 'deleteSilence'];
let copy = '';
let repo: RepoCopy | undefined;
let started: ChildProcess | undefined;

afterAll(async () => {
  if (started?.exitCode === null) process.kill(-started.pid!, 'SIGKILL');
  await repo?.remove();
});

/** Runs a command in the copy with a bounded time, the test runner's variables left out. */
const run = (...args: Parameters<RepoCopy['run']>) => repo!.run(...args);

it('bulkhead new server billing-reports: installed, typechecked, linted, tested, served, and nothing else changed', async () => {
  repo = await copyRepository('bulkhead-new-server-');
  copy = repo.dir;
  const install = await run('pnpm', ['install', '--prefer-offline', '--frozen-lockfile']);
  expect(install.code, outputOf(install)).toBe(0);

  const created = await run('pnpm', ['bulkhead', 'new', 'server', NAME]);
  expect(created.code, outputOf(created)).toBe(0);
  expect(created.stdout).toContain(
    `Created servers/${NAME}: port ${PORT}, scope ${NAME}:read, not customer-bound.`,
  );
  expect(created.stdout).toContain(`serves it at http://127.0.0.1:${PORT}/mcp`);
  // A server drafted from an OpenAPI document: one tool a chosen operation, each tested against a stub.
  const spec = extractAlertmanagerSpec(join(copy, '..', `${copy.split('/').pop()}-alertmanager.json`));
  const drafted = await run('pnpm', [
    'bulkhead',
    'new',
    'server',
    ALERTS,
    '--from-openapi',
    spec,
    ...ALERT_OPERATIONS.flatMap((id) => ['--operation', id]),
  ]);
  await rm(spec, { force: true });
  expect(drafted.code, outputOf(drafted)).toBe(0);
  expect(drafted.stdout).toContain(
    `Created servers/${ALERTS}: port ${PORT + 1}, scopes alerts:read, alerts:write, approvals:read, not customer-bound.`,
  );
  expect(drafted.stdout).toContain(
    'Descriptions to sharpen for the model: get_alerts, get_silences, post_silences, delete_silence.',
  );
  expect(drafted.stdout).toContain('    post_silences: matchers[].isEqual, id');
  expect(drafted.stdout).toContain('Probe: get_alerts with no arguments');

  const relinked = await run('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile']);
  expect(relinked.code, outputOf(relinked)).toBe(0);

  const typecheck = await run('pnpm', ['--filter', NAME, 'typecheck']);
  expect(typecheck.code, outputOf(typecheck)).toBe(0);
  const eslint = await run('pnpm', ['exec', 'eslint', `servers/${NAME}`, `servers/${ALERTS}`]);
  expect(eslint.code, outputOf(eslint)).toBe(0);
  const alertsTypecheck = await run('pnpm', ['--filter', ALERTS, 'typecheck']);
  expect(alertsTypecheck.code, outputOf(alertsTypecheck)).toBe(0);
  const changed = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], {
    cwd: copy,
    encoding: 'utf8',
  })
    .stdout.split('\n')
    .filter(Boolean)
    .map((line) => line.slice(3));
  const prettier = await run('pnpm', ['exec', 'prettier', '--check', '--ignore-unknown', ...changed]);
  expect(prettier.code, outputOf(prettier)).toBe(0);

  // Its own tests, and the cross-server ones that find it by its manifest (token matrix, roles, README
  // figures, the roles table of docs/database.md), on this run's PostgreSQL.
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
      'packages/cli/src/privileges.test.ts',
    ],
    { DATABASE_URL: process.env.BULKHEAD_TEST_ADMIN_URL },
  );
  expect(tests.code, outputOf(tests)).toBe(0);
  expect(tests.stdout).toMatch(/Test Files +7 passed \(7\)/);
  expect(tests.stdout).toContain(
    `✓ test/tokens.test.ts > the token matrix on '${NAME}' > accepts its own token`,
  );
  expect(tests.stdout).toContain(
    `✓ test/roles.test.ts > every role × every table × select, insert, update, delete, refused by the database itself > ${NAME} (added) may do what the kit gives every MCP server, and nothing else`,
  );
  // The drafted server's own tests: lint and budgets, each read against a stub of its operation, each
  // gated call pending until approved and then sent once.
  const alertsTests = await run('pnpm', ['vitest', 'run', '--reporter=verbose', `servers/${ALERTS}`], {
    DATABASE_URL: process.env.BULKHEAD_TEST_ADMIN_URL,
  });
  expect(alertsTests.code, outputOf(alertsTests)).toBe(0);
  expect(alertsTests.stdout).toMatch(/Test Files +5 passed \(5\)/);
  expect(alertsTests.stdout).toContain(
    '✓ servers/alerts/src/tools/post-silences.test.ts > post_silences > sends the request once a person approves, with a random idempotency key from the outbox',
  );

  // The deployment checks that need no container engine: the compose file and every Kubernetes overlay.
  const compose = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-compose.ts']);
  expect(compose.code, outputOf(compose)).toBe(0);
  expect(compose.stdout).toContain(`ok   compose: ${NAME}: a service`);
  const k8s = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-k8s.ts']);
  expect(k8s.code, outputOf(k8s)).toBe(0);
  expect(k8s.stdout).toContain(
    `ok   k8s: overlays/${NAME}: container port http and PORT are the manifest's ${PORT}`,
  );

  // pnpm start on the embedded default: the new server is served and gets a demo token.
  const offset = await freeOffset(PORT + 1);
  started = spawn('pnpm', ['start', '--port-offset', String(offset), '--quiet'], {
    cwd: copy,
    env: childEnv({
      DATABASE_URL: undefined,
      BULKHEAD_DATA_DIR: join(copy, '.bulkhead'),
      // The drafted server reads its upstream's base URL; nothing reaches it while it only starts.
      ALERTMANAGER_API_URL: 'http://127.0.0.1:9',
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  let err = '';
  started.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  started.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const deadline = Date.now() + 240_000;
  while (!out.includes('Ctrl-C stops everything')) {
    if (started.exitCode !== null || Date.now() > deadline) throw new Error(`pnpm start: ${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const url = `http://127.0.0.1:${PORT + offset}/mcp`;
  expect(out).toMatch(
    new RegExp(`^ {2}${NAME} +${url.replaceAll('.', '\\.')} +as bulkhead_billing_reports_login$`, 'm'),
  );
  const token = new RegExp(`^ {2}${NAME} +(bh_${NAME}_\\S+)$`, 'm').exec(out)?.[1];
  const other = /^ {2}dev-knowledge +(bh_dev-knowledge_\S+)$/m.exec(out)?.[1];
  expect([token, other].every(Boolean), out).toBe(true);

  const client = new Client(
    { name: 'new-server-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['count_weekdays']);
  const result = await client.callTool({
    name: 'count_weekdays',
    arguments: { from: '2026-03-02', to: '2026-03-15' },
  });
  expect([result.isError, result.structuredContent]).toEqual([
    undefined,
    { from: '2026-03-02', to: '2026-03-15', days: 14, weekdays: 10 },
  ]);
  await client.close();
  const post = (target: string, bearer: string) =>
    fetch(target, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${bearer}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
  const refused = await post(url, other!);
  expect([refused.status, refused.headers.get('www-authenticate')]).toEqual([
    401,
    expect.stringContaining('error="invalid_token"'),
  ]);
  const elsewhere = await post(`http://127.0.0.1:${3103 + offset}/mcp`, token!);
  expect(elsewhere.status).toBe(401);

  const exited = new Promise<number | null>((resolve) => started!.once('exit', resolve));
  process.kill(-started.pid!, 'SIGINT');
  expect(await exited).toBe(0);

  // Outside the new servers' folders: the lockfile and the generated deployment entries, lines added only.
  spawnSync('git', ['add', '-A', '-N'], { cwd: copy });
  const numstat = spawnSync('git', ['diff', '--numstat'], { cwd: copy, encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'))
    .filter(([, , path]) => !path!.startsWith(`servers/${NAME}/`) && !path!.startsWith(`servers/${ALERTS}/`));
  expect(numstat.map(([, , path]) => path).sort()).toEqual([
    'infra/docker/compose.yaml',
    `infra/k8s/overlays/${ALERTS}/kustomization.yaml`,
    `infra/k8s/overlays/${ALERTS}/secrets-and-port.yaml`,
    `infra/k8s/overlays/${ALERTS}/upstream-egress.yaml`,
    `infra/k8s/overlays/${NAME}/kustomization.yaml`,
    `infra/k8s/overlays/${NAME}/secrets-and-port.yaml`,
    'pnpm-lock.yaml',
  ]);
  expect(numstat.filter(([, removed, path]) => path !== 'pnpm-lock.yaml' && removed !== '0')).toEqual([]);
  const lock = spawnSync('git', ['diff', 'pnpm-lock.yaml'], { cwd: copy, encoding: 'utf8' }).stdout;
  expect(lock).toContain(`  servers/${NAME}:`);
  expect(lock).toContain(`  servers/${ALERTS}:`);
  expect(await readFile(join(copy, 'servers', NAME, 'package.json'), 'utf8')).toContain(`"port": ${PORT}`);

  // A customer-bound server: its test token is bound to a customer, and its tests pass as well.
  // Made beside a second stack (BULKHEAD_PORT_OFFSET): `pnpm start` serves it at its port plus the offset.
  const bound = await run('pnpm', ['bulkhead', 'new', 'server', 'partner-portal', '--customer-bound'], {
    BULKHEAD_PORT_OFFSET: '1000',
  });
  expect(bound.code, outputOf(bound)).toBe(0);
  expect(bound.stdout).toContain(
    `Created servers/partner-portal: port ${PORT + 2}, scope partner-portal:read, customer-bound.`,
  );
  expect(bound.stdout).toContain(`serves it at http://127.0.0.1:${PORT + 2 + 1000}/mcp`);
  expect((await run('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile'])).code).toBe(0);
  const boundTests = await run(
    'pnpm',
    ['vitest', 'run', 'servers/partner-portal', 'test/manifests.test.ts'],
    {
      DATABASE_URL: process.env.BULKHEAD_TEST_ADMIN_URL,
    },
  );
  expect(boundTests.code, outputOf(boundTests)).toBe(0);

  // A server over a system of the company's: the upstream declared in its manifest, an example read
  // tool calling it through ctx.upstream, and that tool's test against a local HTTP server it starts.
  const upstream = await run('pnpm', [
    'bulkhead',
    'new',
    'server',
    'alert-reader',
    '--upstream',
    'alerts=ALERTS_URL',
  ]);
  expect(upstream.code, outputOf(upstream)).toBe(0);
  const manifest = JSON.parse(
    await readFile(join(copy, 'servers', 'alert-reader', 'package.json'), 'utf8'),
  ) as {
    bulkhead: { upstreams?: Record<string, { baseUrlEnv?: string }> };
  };
  expect(manifest.bulkhead.upstreams?.alerts?.baseUrlEnv).toBe('ALERTS_URL');
  // Its deployment entries take the upstream's variables, and its overlay's egress reaches the upstream's port.
  const upstreamCompose = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-compose.ts']);
  expect(upstreamCompose.code, outputOf(upstreamCompose)).toBe(0);
  expect(upstreamCompose.stdout).toContain(
    "ok   compose: alert-reader: upstream alerts's ALERTS_TOKEN required from the environment",
  );
  const upstreamK8s = await run('pnpm', ['exec', 'tsx', 'infra/ci/check-k8s.ts']);
  expect(upstreamK8s.code, outputOf(upstreamK8s)).toBe(0);
  expect(upstreamK8s.stdout).toContain(
    'ok   k8s: overlays/alert-reader Deployment/bulkhead-alert-reader: egress only to DNS and PostgreSQL, alerts (TCP/443)',
  );
  expect((await run('pnpm', ['install', '--prefer-offline', '--no-frozen-lockfile'])).code).toBe(0);
  const upstreamChecks = [
    await run('pnpm', ['--filter', 'alert-reader', 'typecheck']),
    await run('pnpm', ['exec', 'eslint', 'servers/alert-reader']),
  ];
  for (const check of upstreamChecks) expect(check.code, outputOf(check)).toBe(0);
  const upstreamTests = await run('pnpm', ['vitest', 'run', '--reporter=verbose', 'servers/alert-reader'], {
    DATABASE_URL: process.env.BULKHEAD_TEST_ADMIN_URL,
  });
  expect(upstreamTests.code, outputOf(upstreamTests)).toBe(0);
  expect(upstreamTests.stdout).toContain('get_alerts_status');
}, 900_000);
