import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { connectTestClient } from '@bulkhead/core/testing';
import { issueToken } from '@bulkhead/core/operator';
import { discoverDeployables } from '@bulkhead/deployables';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, root, testMailCatcher } from './helpers.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const deployables = discoverDeployables(root);

describe.each(deployables.map((d) => d.name))('the built %s', (name) => {
  it('bundles to dist/main.js and runs from it with node alone', async () => {
    const { dir, upstreams } = deployables.find((d) => d.name === name)!;
    const build = spawnSync(process.execPath, ['../../packages/cli/build-server.mjs'], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(build.stdout).toContain('built dist/main.js');
    expect(build.status).toBe(0);
    const port = await freePort();
    const child = spawn(process.execPath, ['dist/main.js'], {
      cwd: dir,
      env: {
        ...process.env,
        DATABASE_URL: (await db.as(name)).url,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        BULKHEAD_MIGRATE: 'false',
        BULKHEAD_SMTP_URL: (await testMailCatcher()).url,
        BULKHEAD_MAIL_FROM: `${name}@bulkhead.test`,
        // The systems it reaches (its manifest's upstreams): named, never asked at start.
        ...Object.fromEntries(upstreams.map((u) => [u.baseUrlEnv, `http://${u.name}.invalid`])),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    try {
      let status = 0;
      for (let i = 0; i < 100 && status !== 200; i++) {
        status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect({ status, output }).toEqual({ status: 200, output: '' });
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});

/**
 * Loaded before a copied server (`node --import`): any read of a deployable's folder (`servers/…`,
 * `apps/…`) or of a package.json outside the copy stops the process with exit code 97, naming the path.
 * The bundle imports node:fs by name, so the patched functions are synced into its named exports.
 */
const GUARD = `
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
const copy = process.env.BULKHEAD_COPY_DIR;
const repositoryFile = (p) => {
  const path = String(p instanceof URL ? p.pathname : p);
  return /(^|\\/)(servers|apps)(\\/|$)/.test(path) || (path.endsWith('package.json') && !path.startsWith(copy));
};
const guard = (target, name) => {
  const original = target[name];
  target[name] = function (p, ...rest) {
    if (repositoryFile(p)) {
      process.stderr.write('guard: ' + name + ' ' + String(p) + '\\n');
      process.exit(97);
    }
    return original.call(this, p, ...rest);
  };
};
for (const name of ['readdirSync', 'readFileSync', 'existsSync', 'statSync', 'lstatSync', 'opendirSync'])
  guard(fs, name);
for (const name of ['readdir', 'readFile', 'stat', 'lstat', 'opendir', 'access']) guard(fs.promises, name);
syncBuiltinESMExports();
`;

/** A deployable built, then laid out as its image is (infra/docker/runtime-files.mjs) in a folder with no repository above it. */
async function copyOut(name: string, into: string): Promise<string> {
  const { dir } = deployables.find((d) => d.name === name)!;
  const build = spawnSync(process.execPath, ['../../packages/cli/build-server.mjs'], {
    cwd: dir,
    encoding: 'utf8',
  });
  expect(build.status).toBe(0);
  const app = join(into, name);
  const layout = spawnSync(process.execPath, ['infra/docker/runtime-files.mjs', dir, app], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(layout.status).toBe(0);
  for (let d = app; dirname(d) !== d; d = dirname(d))
    expect([d, existsSync(join(d, 'servers')) || existsSync(join(d, 'pnpm-workspace.yaml'))]).toEqual([
      d,
      false,
    ]);
  return app;
}

/** Starts the copy in `app` under the guard against `databaseUrl`, and waits for /healthz. */
async function startCopy(app: string, guard: string, databaseUrl: string) {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', guard, 'main.js'], {
    cwd: app,
    env: {
      ...process.env,
      BULKHEAD_COPY_DIR: app,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      LOG_LEVEL: 'warn',
      BULKHEAD_MIGRATE: 'false',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let status = 0;
  for (let i = 0; i < 200 && status !== 200 && child.exitCode === null; i++) {
    status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base: `http://127.0.0.1:${port}`,
    status,
    output: () => output,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('a built deployable copied out of the repository', () => {
  let copy = '';
  let guard = '';
  beforeAll(async () => {
    copy = await mkdtemp(join(tmpdir(), 'bulkhead-copy-'));
    guard = join(copy, 'guard.mjs');
    await writeFile(guard, GUARD);
  });
  afterAll(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  it('has a guard that stops a process reading a servers/ folder, saying which', () => {
    const tripped = spawnSync(
      process.execPath,
      ['--import', guard, '--input-type=module', '-e', "(await import('node:fs')).readdirSync('/x/servers')"],
      { cwd: copy, env: { ...process.env, BULKHEAD_COPY_DIR: copy }, encoding: 'utf8' },
    );
    expect([tripped.status, tripped.stderr.trim()]).toEqual([97, 'guard: readdirSync /x/servers']);
  });

  it('an MCP server starts from the copy alone, serves tools/list, and reads no manifest of the repository', async () => {
    const app = await copyOut('dev-knowledge', copy);
    // On the embedded default it would give its own group role these grants.
    expect(existsSync(join(app, 'grants.sql'))).toBe(true);
    const { token } = await issueToken(db.sql, {
      server: 'dev-knowledge',
      label: 'copied server',
      scopes: ['docs:read'],
      customerId: null,
      expiresAt: new Date(Date.now() + 3600_000),
      createdBy: 'test',
    });
    const started = await startCopy(app, guard, (await db.as('dev-knowledge')).url);
    try {
      expect({ status: started.status, output: started.output() }).toEqual({ status: 200, output: '' });
      const client = await connectTestClient(new URL(`${started.base}/mcp`), token);
      try {
        expect((await client.listTools()).tools.map((t) => t.name)).toContain('search_docs');
      } finally {
        await client.close();
      }
    } finally {
      await started.stop();
    }
    expect(started.output()).toBe('');
  });

  it('the console grants tokens for the MCP servers it was built with, reading none of their folders', async () => {
    const app = await copyOut('console', copy);
    const started = await startCopy(app, guard, (await db.as('console')).url);
    try {
      expect({ status: started.status, output: started.output() }).toEqual({ status: 200, output: '' });
      const meta = (await (await fetch(`${started.base}/.well-known/oauth-authorization-server`)).json()) as {
        scopes_supported: string[];
      };
      const scopes = deployables.filter((d) => d.kind === 'mcp').flatMap((d) => d.scopes);
      expect(meta.scopes_supported).toEqual([...new Set(scopes)].sort());
    } finally {
      await started.stop();
    }
    expect(started.output()).toBe('');
  });
});
