import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers.ts';

// PgBouncer 1.18 (Debian's) started by the tests that put it between a server and PostgreSQL.

const PGBOUNCER = '/usr/sbin/pgbouncer';
const INSTALL =
  'PgBouncer is not installed (expected at /usr/sbin/pgbouncer); install it with ' +
  '`apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y pgbouncer`, then ' +
  '`systemctl disable --now pgbouncer` (the tests run their own instance)';

/** The fix the refusal names, as the tests look for it. */
export const REFUSAL = /connection pooler .*`pool_mode = session`.*or connect to PostgreSQL directly/;

export interface PgBouncer {
  /** `url` with its host and port replaced by the pooler's. */
  through(url: string): string;
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer (as `postgres` when run as root) on a free loopback port, in front of `url`'s server;
 * `extra` lines go into its `[pgbouncer]` section.
 */
export async function startPgBouncer(
  url: string,
  mode: 'session' | 'transaction',
  ignoreReadOnly: boolean,
  extra: readonly string[] = [],
): Promise<PgBouncer> {
  if (!existsSync(PGBOUNCER)) throw new Error(INSTALL);
  const target = new URL(url);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bulkhead-pgbouncer-'));
  chmodSync(dir, 0o777);
  // Trust between client and pooler; the pooler logs in to PostgreSQL with the password listed here.
  writeFileSync(
    join(dir, 'users.txt'),
    `"${decodeURIComponent(target.username)}" "${decodeURIComponent(target.password)}"\n`,
  );
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `pool_mode = ${mode}`,
      'max_client_conn = 200',
      'default_pool_size = 30',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      ...(ignoreReadOnly
        ? ['ignore_startup_parameters = extra_float_digits, default_transaction_read_only, options']
        : []),
      ...extra,
      '',
    ].join('\n'),
  );
  for (const f of ['users.txt', 'pgbouncer.ini']) chmodSync(join(dir, f), 0o644);
  const args = [...(process.getuid?.() === 0 ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
  let output = '';
  const child: ChildProcess = spawn(PGBOUNCER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const log = () => {
    const file = join(dir, 'pgbouncer.log');
    return output + (existsSync(file) ? readFileSync(file, 'utf8') : '');
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited: ${log()}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen: ${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    through(u) {
      const v = new URL(u);
      v.hostname = '127.0.0.1';
      v.port = String(port);
      return v.toString();
    },
    log,
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      }),
  };
}
