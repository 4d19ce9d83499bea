import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuditWriter, sealLog } from '@bulkhead/audit';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

// `bulkhead audit forward` once (the CronJob's way): what it forwards, what it says, and what stops it.

let db: TestDatabase;
let dir: string;
let env: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-audit-forward-'));
  const audit = createAuditWriter((await db.as('customer')).sql);
  for (let i = 1; i <= 5; i++)
    await audit.append({
      server: 'customer',
      method: 'tools/call',
      tool: 'get_invoice',
      outcome: i === 3 ? 'forbidden' : 'ok',
      requestId: `req-${i}`,
      durationMs: i,
    });
  await sealLog(db.sql, 'k'.repeat(43));
  // As the sealer's own login, which may not migrate: its role alone holds the positions.
  env = { DATABASE_URL: (await db.as('sealer')).url, BULKHEAD_MIGRATE: 'false', BULKHEAD_DATA_DIR: dir };
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

/** A loopback port nobody listens on. */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

it('says where to forward to when nothing is set, and names a CA file it cannot read or a URL that is no tls://', async () => {
  const none = await runCli(['audit', 'forward'], env);
  expect(none.code).toBe(1);
  expect(none.stderr).toContain(
    'nowhere to forward to: set BULKHEAD_AUDIT_SYSLOG_URL (tls://host:port) or BULKHEAD_AUDIT_OCSF_FILE',
  );
  const ca = await runCli(['audit', 'forward'], {
    ...env,
    BULKHEAD_AUDIT_SYSLOG_URL: 'tls://127.0.0.1:6514',
    BULKHEAD_AUDIT_SYSLOG_CA_FILE: join(dir, 'no-such-ca.pem'),
  });
  expect(ca.code).toBe(1);
  expect(ca.stderr).toContain(
    `BULKHEAD_AUDIT_SYSLOG_CA_FILE: cannot read ${join(dir, 'no-such-ca.pem')} (ENOENT)`,
  );
  const http = await runCli(['audit', 'forward'], {
    ...env,
    BULKHEAD_AUDIT_SYSLOG_URL: 'http://127.0.0.1:6514',
  });
  expect(http.code).toBe(1);
  expect(http.stderr).toContain('BULKHEAD_AUDIT_SYSLOG_URL');
});

it('forwards what is sealed to each destination, keeps what a failing one has not acknowledged, and exits 1 for it', async () => {
  const file = join(dir, 'audit.ocsf.jsonl');
  const port = await closedPort();
  const both = {
    ...env,
    BULKHEAD_AUDIT_OCSF_FILE: file,
    BULKHEAD_AUDIT_SYSLOG_URL: `tls://127.0.0.1:${port}`,
  };
  const first = await runCli(['audit', 'forward', '--json'], both);
  expect(first.code).toBe(1);
  const report = JSON.parse(first.stdout) as {
    destination: string;
    forwarded: number;
    lag: number;
    error?: string;
  }[];
  expect(report).toEqual([
    {
      destination: `syslog:tls://127.0.0.1:${port}`,
      forwarded: 0,
      lag: 5,
      error: expect.stringContaining('ECONNREFUSED'),
    },
    { destination: `ocsf:${file}`, forwarded: 5, lag: 0 },
  ]);
  const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
  expect(lines.map((l) => (JSON.parse(l) as { status_code: string }).status_code)).toEqual([
    'ok',
    'ok',
    'forbidden',
    'ok',
    'ok',
  ]);

  const again = await runCli(['audit', 'forward'], { ...env, BULKHEAD_AUDIT_OCSF_FILE: file });
  expect(again.code).toBe(0);
  expect(again.stdout.trim()).toBe(`ocsf:${file}: forwarded 0 events, 0 still to forward.`);
  expect((await readFile(file, 'utf8')).trimEnd().split('\n')).toHaveLength(5);
});
