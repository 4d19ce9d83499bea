/**
 * Runs the official MCP conformance suite (@modelcontextprotocol/conformance, the
 * latest stable and the newest 0.2 alpha, under Node 22 from the npm registry)
 * against every MCP server of the repository, for the protocol revisions
 * 2025-11-25 and 2026-07-28, through a small proxy that adds the server's token
 * (the suite has no way to send one). Every check of every scenario must pass,
 * except those listed in not-applicable.yaml with the reason; a listed entry
 * that passes is an error too, so the list stays true.
 *
 * It then runs the suite's authorization-server scenarios (0.2 alpha: metadata, and the authorization
 * code grant) against the console as the OAuth authorization server of the MCP servers, with the
 * consent page clicked in Chromium as a person would.
 *
 * Usage: tsx test/conformance/run.ts [--server <name>] [--authorization-only] [--keep <dir>]
 * The database is DATABASE_URL's server, else an embedded one in a temp dir.
 * Exit code 0 when every applicable check passed, 1 otherwise.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve } from '@hono/node-server';
import { createLogger } from '@bulkhead/core';
import { issueToken } from '@bulkhead/core/operator';
import { chromiumLaunchOptions, issueTestToken, startTestServer } from '@bulkhead/core/testing';
import { ensureEmbedded, type EmbeddedDatabase } from '@bulkhead/db/embedded';
import { roleSpecs } from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { chromium } from 'playwright-core';
import { parse as parseYaml } from 'yaml';
import { createConsoleApp } from '../../apps/console/src/app.tsx';
import { freePort, root } from '../helpers.ts';
import { discoverMcpServers, loadServerDefinition } from '../servers.ts';
import { startTestUpstreams } from '../upstreams.ts';

/** Node 22 from the npm registry (the suite needs it; the repository runs on Node 20). */
const NODE_22 = 'node@22.23.3';

/** The two suite versions, as installed in test/node_modules, with how each selects a revision. */
const SUITES = [
  {
    version: '0.1.16',
    package: 'mcp-conformance-stable',
    // 0.1.x knows revisions up to 2025-11-25 and selects scenarios by --spec-version.
    runs: [{ revision: '2025-11-25', args: ['--spec-version', '2025-11-25'] }],
  },
  {
    version: '0.2.0-alpha.12',
    package: '@modelcontextprotocol/conformance',
    runs: [
      { revision: '2025-11-25', args: ['--requirements', '2025-11-25'] },
      { revision: '2026-07-28', args: ['--requirements', '2026-07-28'] },
    ],
  },
] as const;

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
interface Check {
  id: string;
  status: Status;
  errorMessage?: string;
}

/**
 * `not-applicable.yaml`: `scenario` or `scenario:check` → why it does not apply to these servers;
 * `server/scenario` or `server/scenario:check` → why it does not apply to that one server.
 */
function notApplicable(): Map<string, string> {
  const file = join(root, 'test', 'conformance', 'not-applicable.yaml');
  return new Map(Object.entries((parseYaml(readFileSync(file, 'utf8')) ?? {}) as Record<string, string>));
}

/** A proxy on a free loopback port that forwards everything to `target` with `Authorization: Bearer <token>` added. */
async function tokenProxy(target: URL, token: string): Promise<{ url: URL; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      {
        hostname: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        // Host and Origin stay as the suite sent them: the DNS-rebinding scenario tests exactly those.
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`proxy: ${err.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Runs one suite version for one revision against `url`; its results land in `out`. */
function runSuite(pkg: string, args: readonly string[], url: URL, out: string): Promise<string> {
  const cli = join(root, 'test', 'node_modules', ...pkg.split('/'), 'dist', 'index.js');
  return new Promise((resolve, reject) => {
    const child = spawn(
      'npx',
      ['-y', NODE_22, cli, 'server', '--url', url.href, ...args, '--output-dir', out],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.once('error', reject);
    // The suite's own exit code counts scenarios that do not apply here; the checks decide below.
    child.once('exit', () => resolve(output));
  });
}

/** The checks of every scenario the suite ran, from its result folders (`server-<scenario>-<time>/checks.json`). */
function results(out: string): Map<string, Check[]> {
  const byScenario = new Map<string, Check[]>();
  for (const dir of readdirSync(out)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(dir)?.[1];
    const file = join(out, dir, 'checks.json');
    if (!scenario || !existsSync(file)) continue;
    byScenario.set(scenario, JSON.parse(readFileSync(file, 'utf8')) as Check[]);
  }
  return byScenario;
}

interface Verdict {
  scenario: string;
  outcome: 'pass' | 'fail' | 'not applicable' | 'stale';
  detail: string;
}

/** Which scenarios passed, which failed a check they should pass, and which do not apply (and still do not pass). */
function judge(byScenario: Map<string, Check[]>, listed: Map<string, string>, server: string): Verdict[] {
  // An entry for this server, else one for every server.
  const na = {
    has: (key: string) => listed.has(`${server}/${key}`) || listed.has(key),
    get: (key: string) => listed.get(`${server}/${key}`) ?? listed.get(key),
  };
  return [...byScenario].map(([scenario, checks]) => {
    const failed = checks.filter((c) => c.status === 'FAILURE');
    if (na.has(scenario))
      return failed.length
        ? { scenario, outcome: 'not applicable', detail: na.get(scenario)! }
        : {
            scenario,
            outcome: 'stale',
            detail: 'listed as not applicable, but every check passed: remove it',
          };
    const unexpected = failed.filter((c) => !na.has(`${scenario}:${c.id}`));
    const stale = checks.filter((c) => c.status !== 'FAILURE' && na.has(`${scenario}:${c.id}`));
    if (unexpected.length)
      return {
        scenario,
        outcome: 'fail',
        detail: unexpected.map((c) => `${c.id}: ${(c.errorMessage ?? '').slice(0, 300)}`).join('; '),
      };
    if (stale.length)
      return {
        scenario,
        outcome: 'stale',
        detail: `${stale.map((c) => c.id).join(', ')} listed as not applicable but passed: remove`,
      };
    const skipped = failed.length
      ? ` (${failed.length} check${failed.length > 1 ? 's' : ''} not applicable)`
      : '';
    return { scenario, outcome: 'pass', detail: `${checks.length} checks${skipped}` };
  });
}

/**
 * The suite's authorization-server scenarios against the console: a client registered by RFC 7591
 * with the suite's callback, the suite's authorization URL opened in Chromium, signed in as an
 * approver who may grant, and allowed. Returns the verdicts of every scenario the suite ran.
 */
async function authorizationServer(
  db: TestDatabase,
  out: string,
  listed: Map<string, string>,
): Promise<Verdict[]> {
  const resource = 'http://127.0.0.1:3103/mcp';
  const [port, callbackPort] = [await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${port}`;
  const consoleApp = createConsoleApp({
    sql: (await db.as('console')).sql,
    logger: createLogger({ level: 'silent' }),
    publicUrl: issuer,
    oauthServers: [
      {
        name: 'dev-knowledge',
        description: 'documents',
        resource,
        scopes: ['docs:read'],
        customerBound: false,
      },
    ],
  });
  const http = serve({ fetch: consoleApp.app.fetch, port, hostname: '127.0.0.1' });
  const { token: approver } = await issueToken(db.sql, {
    kind: 'approver',
    server: 'console',
    label: 'Conformance (grants)',
    scopes: ['approvals:decide', 'grants:issue'],
    expiresAt: null,
    createdBy: 'conformance',
  });
  const registered = await fetch(`${issuer}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'MCP conformance suite',
      redirect_uris: [`http://127.0.0.1:${callbackPort}/callback`],
      token_endpoint_auth_method: 'none',
    }),
  });
  const { client_id: clientId } = (await registered.json()) as { client_id: string };
  const browser = await chromium.launch(chromiumLaunchOptions());
  const dir = join(out, 'console', 'authorization');
  try {
    const cli = join(
      root,
      'test',
      'node_modules',
      '@modelcontextprotocol',
      'conformance',
      'dist',
      'index.js',
    );
    const child = spawn(
      'npx',
      [
        '-y',
        NODE_22,
        cli,
        'authorization',
        '--url',
        issuer,
        '--client-id',
        clientId,
        '--resource',
        resource,
        '--port',
        String(callbackPort),
        '--output-dir',
        dir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let output = '';
    let consented: Promise<void> | undefined;
    const consent = async (url: string) => {
      const page = await browser.newPage();
      try {
        page.setDefaultTimeout(20_000);
        await page.goto(url);
        await page.getByLabel('Approver token').fill(approver);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('button', { name: 'Allow' }).click();
        await page.waitForURL(new RegExp(`^http://127\\.0\\.0\\.1:${callbackPort}/callback`));
      } finally {
        await page.close();
      }
    };
    const watch = (d: Buffer) => {
      output += d.toString();
      const url = new RegExp(`^${issuer.replaceAll('.', '\\.')}/oauth/authorize\\?\\S+`, 'm').exec(
        output,
      )?.[0];
      if (url && !consented) consented = consent(url);
    };
    child.stdout.on('data', watch);
    child.stderr.on('data', watch);
    await new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    await consented;
    const byScenario = new Map<string, Check[]>();
    for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
      const scenario = /^authorization-server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry)?.[1];
      const file = join(dir, entry, 'checks.json');
      if (scenario && existsSync(file))
        byScenario.set(scenario, JSON.parse(readFileSync(file, 'utf8')) as Check[]);
    }
    if (!byScenario.size) console.log(`conformance console authorization: the suite ran nothing\n${output}`);
    return judge(byScenario, listed, 'console');
  } finally {
    await browser.close();
    await new Promise((resolve) => http.close(resolve));
    await consoleApp.close();
  }
}

async function database(): Promise<{ adminUrl: string; stop(): Promise<void> }> {
  // This script is a deployable of its own: its one environment read.
  const external = process.env.DATABASE_URL;
  if (external) return { adminUrl: external, stop: async () => {} };
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-conformance-'));
  const db: EmbeddedDatabase = await ensureEmbedded({ dataDir: dir });
  const admin = new URL(db.adminUrl);
  admin.pathname = '/postgres';
  return {
    adminUrl: admin.toString(),
    stop: async () => {
      await db.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      server: { type: 'string' },
      keep: { type: 'string' },
      'authorization-only': { type: 'boolean', default: false },
    },
  });
  const na = notApplicable();
  const servers = discoverMcpServers().filter((s) => !values.server || s.name === values.server);
  if (!servers.length) throw new Error(`no MCP server${values.server ? ` named ${values.server}` : ''}`);
  const pg = await database();
  process.env.BULKHEAD_TEST_ADMIN_URL = pg.adminUrl;
  const db = await createTestDatabase({ roles: roleSpecs(discoverDeployables(root)) });
  const out = values.keep ?? (await mkdtemp(join(tmpdir(), 'bulkhead-conformance-results-')));
  let failures = 0;
  let passes = 0;
  try {
    await db.sql`insert into customers (id, name, email) values ('C-1001', 'Nordlicht GmbH', 'billing@nordlicht.example')`;
    for (const manifest of values['authorization-only'] ? [] : servers) {
      const def = await loadServerDefinition(manifest);
      // A server over another system is served with it, as it runs (real, or its own stand-in).
      const upstreams = await startTestUpstreams(manifest);
      const server = await startTestServer(def, { db, upstreams: upstreams.upstreams });
      const token = await issueTestToken(db.sql, def, {
        customerId: manifest.customerBound ? 'C-1001' : null,
      });
      const proxy = await tokenProxy(server.url, token);
      try {
        for (const suite of SUITES)
          for (const run of suite.runs) {
            const dir = join(out, manifest.name, `${suite.version}-${run.revision}`);
            const log = await runSuite(suite.package, run.args, proxy.url, dir);
            const verdicts = existsSync(dir) ? judge(results(dir), na, manifest.name) : [];
            if (!verdicts.length) {
              console.log(
                `conformance ${manifest.name} ${suite.version} ${run.revision}: the suite ran nothing\n${log}`,
              );
              failures++;
              continue;
            }
            for (const v of verdicts) {
              if (v.outcome === 'pass') passes++;
              if (v.outcome === 'fail' || v.outcome === 'stale') failures++;
              console.log(
                `conformance ${manifest.name} ${suite.version} ${run.revision} ${v.scenario}: ${v.outcome} — ${v.detail}`,
              );
            }
          }
      } finally {
        await proxy.close();
        await server.close();
        await upstreams.close();
      }
    }
    if (!values.server) {
      const verdicts = await authorizationServer(db, out, na);
      if (!verdicts.length) failures++;
      for (const v of verdicts) {
        if (v.outcome === 'pass') passes++;
        if (v.outcome === 'fail' || v.outcome === 'stale') failures++;
        console.log(
          `conformance console 0.2.0-alpha.12 authorization ${v.scenario}: ${v.outcome} — ${v.detail}`,
        );
      }
    }
  } finally {
    await db.drop();
    await pg.stop();
    if (!values.keep) await rm(out, { recursive: true, force: true });
  }
  console.log(`conformance: ${passes} applicable scenario runs passed, ${failures} failed`);
  return failures ? 1 : 0;
}

process.exit(await main());
