import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root } from './helpers.ts';

/**
 * The test command itself: `pnpm test` on the fixtures of test/harness/ (outside the suite's include
 * globs), in a child process with a global setup of its own, as someone runs it.
 */
function pnpmTest(files: string[], db: 'embedded' | 'external') {
  const env: Record<string, string | undefined> = {
    ...process.env,
    NO_COLOR: '1',
    FORCE_COLOR: undefined,
    // Checked by the parent run already; this run is about the exit code.
    BULKHEAD_TEST_SYSTEM: 'skip',
    // The fixture checks that its run used the database asked for.
    BULKHEAD_HARNESS_DB: db,
    // The embedded default without it; with it, the cluster this run uses, as CI's real PostgreSQL.
    DATABASE_URL: db === 'external' ? process.env.BULKHEAD_TEST_ADMIN_URL : undefined,
  };
  for (const key of Object.keys(env))
    if (/^VITEST|^TINYPOOL|^BULKHEAD_TEST_(?!SYSTEM)/.test(key) || env[key] === undefined) delete env[key];
  delete env.NODE_ENV;
  const args = ['test', '--config', 'vitest.harness.config.ts', ...files.map((f) => `test/harness/${f}`)];
  return new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    const child = spawn('pnpm', args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out }));
  });
}

describe("pnpm test exits with vitest's code, whatever the database's teardown does", () => {
  it('fails when a test fails, on the embedded database', async () => {
    const run = await pnpmTest(['database.fixture.ts', 'fails.fixture.ts'], 'embedded');
    expect(run.out).toMatch(/Tests {2}1 failed \| 1 passed \(2\)/);
    expect(run.code, run.out).toBe(1);
  }, 300_000);

  it('passes when every test passes, on the embedded database', async () => {
    const run = await pnpmTest(['database.fixture.ts'], 'embedded');
    expect(run.out).toMatch(/Tests {2}1 passed \(1\)/);
    expect(run.code, run.out).toBe(0);
  }, 300_000);

  it("fails when a test fails, on DATABASE_URL's PostgreSQL", async () => {
    const run = await pnpmTest(['database.fixture.ts', 'fails.fixture.ts'], 'external');
    expect(run.out).toMatch(/Tests {2}1 failed \| 1 passed \(2\)/);
    expect(run.code, run.out).toBe(1);
  }, 300_000);
});

describe("the README's Quick start is what CI runs", () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const quickStart = readme.slice(
    readme.indexOf('## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
  );
  const commands = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.trim().split('\n'));
  /** .ci/run's command lines, without the variables set before them and what `||` runs after. */
  const ciLines = readFileSync(join(root, '.ci', 'run'), 'utf8')
    .split('\n')
    .map((line) =>
      line
        .trim()
        .replace(/^env( -u \w+)* /, '')
        .replace(/^(\w+=\S+ )+/, '')
        .replace(/ \|\| .*$/, ''),
    );

  it('shows the set-up, pnpm start and pnpm test', () => {
    expect(commands).toEqual(['npm i -g pnpm@12.4.2 && pnpm install', 'pnpm start', 'pnpm test']);
  });

  it('has .ci/run run its set-up and its test command verbatim', () => {
    for (const command of commands.filter((c) => c !== 'pnpm start')) expect(ciLines).toContain(command);
  });
});
