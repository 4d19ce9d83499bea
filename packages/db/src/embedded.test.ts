import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { createSql } from './connect.ts';
import { embeddedUrlFile, ensureEmbedded } from './embedded.ts';

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
}

it('starts once, is reused by a second caller, survives a killed postgres, and stops cleanly', async () => {
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-embedded-'));
  const [a, b] = await Promise.all([ensureEmbedded({ dataDir: dir }), ensureEmbedded({ dataDir: dir })]);
  expect([a.owned, b.owned].sort()).toEqual([false, true]);
  expect(a.url).toBe(b.url);
  const url = new URL(a.url);
  expect(url.hostname).toBe('127.0.0.1');
  expect(url.password.length).toBeGreaterThan(20);
  expect(readFileSync(embeddedUrlFile(dir), 'utf8')).toBe(a.adminUrl);
  // What the CLI and `pnpm start` work as owns the database, and is no superuser.
  expect(url.username).toBe('bulkhead_owner');
  const admin = createSql(a.adminUrl, { max: 1 });
  const [dbOwner] = await admin<{ owner: string; superuser: boolean; createrole: boolean }[]>`
    select r.rolname as owner, r.rolsuper as superuser, r.rolcreaterole as createrole
    from pg_database d join pg_roles r on r.oid = d.datdba where d.datname = current_database()`;
  expect(dbOwner).toEqual({ owner: 'bulkhead_owner', superuser: false, createrole: false });
  await admin.end();

  const sql = createSql(a.url, { max: 1 });
  await sql`create table kept (v text)`;
  await sql`insert into kept values ('still here')`;
  await sql.end();
  const superuser = createSql(a.adminUrl, { max: 1 });
  const [settings] = await superuser<{ listen: string; sockets: string }[]>`
    select current_setting('listen_addresses') as listen, current_setting('unix_socket_directories') as sockets`;
  expect(settings).toEqual({ listen: '127.0.0.1', sockets: '' });
  await superuser.end();

  // A crashed server leaves a URL that no longer answers: the next caller restarts it on the same data.
  const owner = a.owned ? a : b;
  execFileSync('kill', ['-9', String(postmasterPid(dir))]);
  await new Promise((r) => setTimeout(r, 500));
  const c = await ensureEmbedded({ dataDir: dir });
  expect(c.owned).toBe(true);
  const again = createSql(c.url, { max: 1 });
  expect(await again`select v from kept`).toEqual([{ v: 'still here' }]);
  await again.end();

  await c.stop();
  await owner.stop().catch(() => {});
  expect(existsSync(embeddedUrlFile(dir))).toBe(false);
  expect(existsSync(join(dir, 'pg', 'postmaster.pid'))).toBe(false);
}, 120_000);

it('is stopped by its last user, not by whoever started it', async () => {
  const shared = await mkdtemp(join(tmpdir(), 'bulkhead-embedded-shared-'));
  const script = join(shared, 'user.mts');
  const { writeFile } = await import('node:fs/promises');
  const { spawn } = await import('node:child_process');
  // A second process that uses the cluster until told to stop, then releases it and reports.
  await writeFile(
    script,
    `import { ensureEmbedded } from ${JSON.stringify(new URL('./embedded.ts', import.meta.url).pathname)};
     const db = await ensureEmbedded({ dataDir: ${JSON.stringify(shared)} });
     process.stdout.write('ready ' + db.owned + '\\n');
     process.stdin.once('data', async () => { process.stdout.write('stopped ' + (await db.stop()) + '\\n'); process.exit(0); });`,
  );
  try {
    const first = await ensureEmbedded({ dataDir: shared });
    expect(first.owned).toBe(true);
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    for (let i = 0; i < 300 && !out.includes('ready'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(out).toBe('ready false\n');

    // The starter leaves: the other process still uses the cluster, so it keeps running.
    expect(await first.stop()).toBe(false);
    const sql = createSql(first.url, { max: 1 });
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
    await sql.end();

    // The last user leaves and stops it, although it did not start it.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdin!.write('stop\n');
    await exited;
    expect(out).toBe('ready false\nstopped true\n');
    expect(existsSync(embeddedUrlFile(shared))).toBe(false);
    expect(existsSync(join(shared, 'pg', 'postmaster.pid'))).toBe(false);

    // Started again, it listens on the same port, so pools holding the old URL reconnect.
    const again = await ensureEmbedded({ dataDir: shared });
    expect(again.url).toBe(first.url);
    await again.stop();
  } finally {
    await rm(shared, { recursive: true, force: true });
  }
}, 120_000);
