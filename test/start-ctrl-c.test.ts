import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freeOffset, root, startStack } from './helpers.ts';

let dataDir = '';
afterAll(async () => {
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// Ctrl-C in a terminal sends SIGINT to the whole foreground process group: pnpm, the script's
// shell, the CLI and every server at once, and pnpm relays it once more. All of that has to end
// in exit code 0, with no pnpm error line.
it('pnpm start exits 0 on Ctrl-C (SIGINT to its process group), with everything stopped', async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'bulkhead-ctrl-c-'));
  const offset = await freeOffset();
  const env: Record<string, string | undefined> = {
    ...process.env,
    BULKHEAD_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
  };
  delete env.DATABASE_URL;
  const child = spawn('pnpm', ['start', '--port-offset', String(offset), '--quiet'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, signal) => resolve([code, signal])),
  );
  try {
    const deadline = Date.now() + 150_000;
    while (!output.includes('Ctrl-C stops everything')) {
      if (child.exitCode !== null) throw new Error(`pnpm start exited early:\n${output}`);
      if (Date.now() > deadline) throw new Error(`pnpm start did not come up:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const admin = `http://127.0.0.1:${3101 + offset}/healthz`;
    expect((await fetch(admin)).status).toBe(200);

    process.kill(-child.pid!, 'SIGINT');
    expect(await exited).toEqual([0, null]);
    // Children that wrote to the same pipes are gone too: wait for the streams to end.
    await new Promise((r) => setTimeout(r, 500));
    expect(output).not.toMatch(/ERR_PNPM|ELIFECYCLE|Command failed/);
    expect(output).toContain('Stopping the servers...');
    expect(output).toContain('Stopping the embedded PostgreSQL...');
    expect({ url: existsSync(join(dataDir, 'database.url')), output }).toEqual({ url: false, output });
    await expect(fetch(admin)).rejects.toThrow();
  } finally {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  }
}, 300_000);

// Issue 31: a server killed outright (SIGKILL, the OOM killer) has no exit code, only a signal; the
// stack used to wait for it forever at "Stopping the servers...". Now it stops everything and exits 1.
it('pnpm start stops everything and exits 1 when a server is killed with SIGKILL', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-sigkill-'));
  const offset = await freeOffset();
  const stack = await startStack(dir, offset);
  const child = stack.child;
  const output = () => stack.stdout() + stack.stderr();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    // The admin server is a child process of the CLI: find it by its command line.
    const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(child.pid)], {
      encoding: 'utf8',
    });
    const admin = /^\s*(\d+) .*servers\/admin\/src\/main\.ts/m.exec(children)?.[1];
    expect(admin, children).toBeDefined();
    process.kill(Number(admin), 'SIGKILL');
    const code = await Promise.race([
      exited,
      new Promise<string>((r) => setTimeout(() => r('still running after 60 s'), 60_000)),
    ]);
    expect({ code, output: output() }).toEqual({ code: 1, output: output() });
    expect(output()).toContain('admin exited (SIGKILL); stopping everything.');
    expect(output()).toContain('Stopping the embedded PostgreSQL...');
    expect(existsSync(join(dir, 'database.url'))).toBe(false);
    await expect(fetch(`http://127.0.0.1:${3103 + offset}/healthz`)).rejects.toThrow();
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}, 300_000);

/** `bulkhead start` (from source, as `pnpm start`) run to its end on the embedded database in `dir`. */
function runStart(
  dir: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const childEnv: Record<string, string | undefined> = {
    ...process.env,
    BULKHEAD_DATA_DIR: dir,
    LOG_LEVEL: 'warn',
    ...env,
  };
  delete childEnv.DATABASE_URL;
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'start', ...args], {
    cwd: root,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

// Issue 44: a port in use (a first `pnpm start` still running) printed "Bulkhead is running:" and then
// a raw EADDRINUSE stack. Now the start stops before anything runs, in one sentence naming the port
// and BULKHEAD_PORT_OFFSET.
it('pnpm start refuses a port in use in one sentence naming it and BULKHEAD_PORT_OFFSET, before anything runs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-taken-'));
  const offset = await freeOffset();
  // Whatever connects is hung up on; it answers no health check either way.
  const taken = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => taken.listen(3100 + offset, '127.0.0.1', resolve));
  try {
    const run = await runStart(dir, { BULKHEAD_PORT_OFFSET: String(offset) });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        new RegExp(
          // (ops waits for its Alertmanager's URL, and says so first)
          `^(?:Not starting .*\\n)*bulkhead start: port ${3100 + offset} \\(console\\) is in use, by another \`pnpm start\` or another program: ` +
            `stop it, or start beside it with other ports, e\\.g\\. BULKHEAD_PORT_OFFSET=(\\d+) pnpm start ` +
            `\\(or --port-offset \\1; the offset is now ${offset}\\)\\n$`,
        ),
      ) as string,
    });
    // Nothing was started: no database, no server.
    expect(existsSync(join(dir, 'pg'))).toBe(false);
    await expect(fetch(`http://127.0.0.1:${3103 + offset}/healthz`)).rejects.toThrow();
  } finally {
    await new Promise((resolve) => taken.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
}, 120_000);

// A server that exits on its own says why, even under --quiet: its last lines follow "exited".
it('pnpm start --quiet names why a server exited: the server’s own last lines, and where all of them are', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-exited-'));
  const offset = await freeOffset();
  try {
    // The CLI does not read it; every MCP server does, and refuses to start on it.
    const run = await runStart(dir, { BULKHEAD_RATE_LIMIT_PER_MINUTE: 'many' }, [
      '--port-offset',
      String(offset),
      '--quiet',
    ]);
    expect(run.code).toBe(1);
    const name = /^(\S+) exited \(code 1\); stopping everything\.$/m.exec(run.stderr)?.[1];
    expect(name, run.stderr).toBeDefined();
    expect(run.stderr).toContain(
      `Its last lines (all of them in ${join(dir, 'logs', `${name}.log`)}):\n[${name}] `,
    );
    expect(run.stderr).toMatch(new RegExp(`^\\[${name}\\] .*BULKHEAD_RATE_LIMIT_PER_MINUTE`, 'm'));
    expect(run.stdout).not.toContain('Bulkhead is running');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}, 300_000);
