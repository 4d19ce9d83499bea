import { spawn, spawnSync } from 'node:child_process';
import { chmod, copyFile, lstat, mkdir, mkdtemp, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { root } from './helpers.ts';

// A copy of this repository to scaffold servers in (test/new-server.test.ts, new-server-mcp.test.ts):
// what `git ls-files` has, committed once, so that a test can see what a command changed.

/** What one command run in the copy printed and returned. */
export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The last of what a run printed, for an assertion's message. */
export const outputOf = (r: Run) => `${r.stdout}\n${r.stderr}`.slice(-4000);

/** The environment of a command in the copy: this process's, the test runner's variables left out. */
export function childEnv(extra: Record<string, string | undefined>): Record<string, string> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    CI: 'true',
    LOG_LEVEL: 'warn',
    NO_COLOR: '1',
    FORCE_COLOR: undefined,
    ...extra,
  };
  for (const key of Object.keys(env))
    if (/^VITEST|^TINYPOOL/.test(key) || env[key] === undefined) delete env[key];
  delete env.NODE_ENV;
  return env as Record<string, string>;
}

/** A copy of the repository in a temporary folder. */
export interface RepoCopy {
  dir: string;
  /** Runs a command in the copy with a bounded time. */
  run(
    command: string,
    args: string[],
    env?: Record<string, string | undefined>,
    timeoutMs?: number,
  ): Promise<Run>;
  /** Removes the copy (and the embedded cluster `pnpm start` made for it, when it lives elsewhere). */
  remove(): Promise<void>;
}

/** The repository as `git ls-files` has it (tracked, and new files not ignored), without node_modules. */
export async function copyRepository(prefix: string): Promise<RepoCopy> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // Open to the postgres user, so that the embedded PostgreSQL of `pnpm start` runs from the copy itself
  // (as root, a private clone's binaries and cluster go to /var/lib/bulkhead, shared with other clones).
  await chmod(dir, 0o755);
  const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
  });
  const files = listed.stdout.split('\0').filter(Boolean);
  for (const file of files) {
    const from = join(root, file);
    const info = await stat(from).catch(() => undefined);
    if (!info?.isFile()) continue; // deleted in the worktree, not yet committed
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await copyFile(from, join(dir, file));
    await chmod(join(dir, file), info.mode);
  }
  const git = (...args: string[]) =>
    spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', ...args], {
      cwd: dir,
      encoding: 'utf8',
    });
  git('init', '-q');
  git('add', '-A');
  if (git('commit', '-qm', 'the repository before bulkhead new server').status !== 0)
    throw new Error(`could not commit the copy in ${dir}`);
  return {
    dir,
    run: (command, args, env = {}, timeoutMs = 180_000) =>
      new Promise<Run>((resolve, reject) => {
        const child = spawn(command, args, {
          cwd: dir,
          env: childEnv(env),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        child.once('error', reject);
        child.once('exit', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      }),
    remove: async () => {
      // As root, the embedded cluster of `pnpm start` lives outside the copy, linked as .bulkhead/pg.
      const pg = join(dir, '.bulkhead', 'pg');
      if ((await lstat(pg).catch(() => undefined))?.isSymbolicLink())
        await rm(await readlink(pg), { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    },
  };
}
