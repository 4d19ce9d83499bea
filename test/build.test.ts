import { spawn, spawnSync } from 'node:child_process';
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
