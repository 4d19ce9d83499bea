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

describe('a built server copied out of the repository', () => {
  let copy = '';
  afterAll(async () => {
    if (copy) await rm(copy, { recursive: true, force: true });
  });

  it('starts from the copy alone, serves MCP, and reads no manifest of the repository', async () => {
    const name = 'dev-knowledge';
    const server = deployables.find((d) => d.name === name)!;
    const build = spawnSync(process.execPath, ['../../packages/cli/build-server.mjs'], {
      cwd: server.dir,
      encoding: 'utf8',
    });
    expect(build.status).toBe(0);
    // The image's layout (infra/docker/runtime-files.mjs), in a folder with no repository above it.
    copy = await mkdtemp(join(tmpdir(), 'bulkhead-copy-'));
    const app = join(copy, 'app');
    const layout = spawnSync(process.execPath, ['infra/docker/runtime-files.mjs', server.dir, app], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(layout.status).toBe(0);
    expect(existsSync(join(app, 'grants.sql'))).toBe(true);
    for (let dir = app; dirname(dir) !== dir; dir = dirname(dir))
      expect([dir, existsSync(join(dir, 'servers')) || existsSync(join(dir, 'pnpm-workspace.yaml'))]).toEqual(
        [dir, false],
      );
    const guard = join(copy, 'guard.mjs');
    await writeFile(guard, GUARD);
    const env = { ...process.env, BULKHEAD_COPY_DIR: app };

    // The guard itself: a read of a servers/ folder stops the process, saying which.
    const tripped = spawnSync(
      process.execPath,
      ['--import', guard, '--input-type=module', '-e', "(await import('node:fs')).readdirSync('/x/servers')"],
      { cwd: app, env, encoding: 'utf8' },
    );
    expect([tripped.status, tripped.stderr.trim()]).toEqual([97, 'guard: readdirSync /x/servers']);

    const { url } = await db.as(name);
    const { token } = await issueToken(db.sql, {
      server: name,
      label: 'copied server',
      scopes: ['docs:read'],
      customerId: null,
      expiresAt: new Date(Date.now() + 3600_000),
      createdBy: 'test',
    });
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', guard, 'main.js'], {
      cwd: app,
      env: { ...env, DATABASE_URL: url, PORT: String(port), LOG_LEVEL: 'warn', BULKHEAD_MIGRATE: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      let status = 0;
      for (let i = 0; i < 200 && status !== 200 && child.exitCode === null; i++) {
        status = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.status,
          () => 0,
        );
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect({ status, output }).toEqual({ status: 200, output: '' });
      const client = await connectTestClient(new URL(`http://127.0.0.1:${port}/mcp`), token);
      try {
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain('search_docs');
      } finally {
        await client.close();
      }
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    expect(output).toBe('');
  });
});
