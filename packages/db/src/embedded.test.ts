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
  expect(readFileSync(embeddedUrlFile(dir), 'utf8')).toBe(a.url);

  const sql = createSql(a.url, { max: 1 });
  await sql`create table kept (v text)`;
  await sql`insert into kept values ('still here')`;
  const [settings] = await sql<{ listen: string; sockets: string }[]>`
    select current_setting('listen_addresses') as listen, current_setting('unix_socket_directories') as sockets`;
  expect(settings).toEqual({ listen: '127.0.0.1', sockets: '' });
  await sql.end();

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
