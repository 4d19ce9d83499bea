import { createHash, createPublicKey } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAuditWriter } from '@bulkhead/audit';
import { startTsa } from '@bulkhead/audit/testing';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

// Signed checkpoints through the CLI (issue 49): `audit keys new`, a sealer that signs, and `audit
// verify --public-key` / `--file` run where there is no audit key at all.

let db: TestDatabase;
let dir: string;
/** Where the sealer runs: it has the audit key and the signing key. */
let sealerEnv: Record<string, string>;
/** Where the auditor runs: no audit key in the environment, and none in its data dir. */
let auditorEnv: Record<string, string>;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'bulkhead-audit-checkpoints-'));
  auditorEnv = { DATABASE_URL: db.url, BULKHEAD_DATA_DIR: join(dir, 'auditor'), BULKHEAD_AUDIT_KEY: '' };
  const audit = createAuditWriter(db.sql);
  for (let i = 1; i <= 5; i++)
    await audit.append({
      server: i % 2 ? 'admin' : 'customer',
      method: 'tools/call',
      tool: 'get_ticket',
      outcome: 'ok',
      requestId: `req-${i}`,
      durationMs: i,
      arguments: { key: `T-100${i}` },
    });
});
afterAll(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

it('makes a key pair, seals with it, and verifies the database and an export with the public key alone', async () => {
  const keys = await runCli(['audit', 'keys', 'new', '--out', join(dir, 'keys'), '--json'], auditorEnv);
  expect(keys.code).toBe(0);
  const made = JSON.parse(keys.stdout) as {
    private_key_file: string;
    public_key_file: string;
    fingerprint: string;
  };
  expect(made.private_key_file).toBe(join(dir, 'keys', 'audit-signing.key'));
  expect((await stat(made.private_key_file)).mode & 0o777).toBe(0o600);
  const der = createPublicKey(await readFile(made.public_key_file, 'utf8')).export({
    type: 'spki',
    format: 'der',
  });
  expect(made.fingerprint).toBe(createHash('sha256').update(der).digest('hex'));
  const again = await runCli(['audit', 'keys', 'new', '--out', join(dir, 'keys')], auditorEnv);
  expect(again.code).toBe(1);
  expect(again.stderr).toContain('a key pair is never overwritten');

  sealerEnv = {
    DATABASE_URL: db.url,
    BULKHEAD_DATA_DIR: join(dir, 'sealer'),
    BULKHEAD_AUDIT_KEY: 's'.repeat(32),
    BULKHEAD_AUDIT_SIGNING_KEY_FILE: made.private_key_file,
  };
  expect((await runCli(['audit', 'seal'], sealerEnv)).code).toBe(0);

  // The auditor has no audit key: the keyed verify refuses, the public one passes.
  expect((await runCli(['audit', 'verify'], auditorEnv)).stderr).toContain('no audit key');
  const pub = ['--public-key', made.public_key_file];
  const ok = await runCli(['audit', 'verify', ...pub], auditorEnv);
  expect(ok.stderr).toBe('');
  expect(ok.code).toBe(0);
  expect(ok.stdout).toMatch(
    new RegExp(
      `^Signed checkpoints: 1 \\(seals 1–1\\), covering events #1–#5; key ${made.fingerprint}; newest \\d+ s ago\\.\\nadmin: ok, 3 sealed events present\\ncustomer: ok, 2 sealed events present\\nNot covered by a checkpoint: none\\.\\n$`,
    ),
  );
  const json = JSON.parse((await runCli(['audit', 'verify', ...pub, '--json'], auditorEnv)).stdout);
  expect(json).toMatchObject({
    ok: true,
    seals: 1,
    sealed_through: 5,
    breaks: [],
    coverage: { checkpoints: 1, first_seal: 1, last_seal: 1, from: 1, through: 5, gaps: [] },
  });

  const file = join(dir, 'kit.jsonl');
  const exported = await runCli(
    ['audit', 'export', '--since', '1d', '--with-checkpoints', '--output', file],
    auditorEnv,
  );
  expect(exported.stderr).toContain(`Exported 5 events with 1 checkpoint to ${file}.`);
  // No database for the offline check: a URL that leads nowhere.
  const offline = { ...auditorEnv, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' };
  const kit = await runCli(['audit', 'verify', '--file', file, ...pub], offline);
  expect(kit.code).toBe(0);
  expect(kit.stdout).toContain('admin: ok, 3 sealed events present');

  const text = await readFile(file, 'utf8');
  await writeFile(join(dir, 'changed.jsonl'), text.replace('T-1004', 'T-9999'));
  const changed = await runCli(
    ['audit', 'verify', '--file', join(dir, 'changed.jsonl'), ...pub, '--json'],
    offline,
  );
  expect(changed.code).toBe(1);
  expect(
    JSON.parse(changed.stdout).breaks.map((b: { kind: string; seq: number }) => [b.kind, b.seq]),
  ).toEqual([['event_changed', 4]]);

  // Another public key: every checkpoint is a break, in the database and in the file.
  const other = await runCli(['audit', 'keys', 'new', '--out', join(dir, 'other'), '--json'], auditorEnv);
  const otherPub = [
    '--public-key',
    (JSON.parse(other.stdout) as { public_key_file: string }).public_key_file,
  ];
  const wrong = await runCli(['audit', 'verify', ...otherPub], auditorEnv);
  expect(wrong.code).toBe(1);
  expect(wrong.stdout).toContain('BROKEN seal 1: checkpoint of seal 1 names signing key');
  expect((await runCli(['audit', 'verify', '--file', file, ...otherPub], offline)).code).toBe(1);
});

it('refuses what a checkpointed export or a public-key verify cannot do', async () => {
  const csv = await runCli(
    ['audit', 'export', '--since', '1d', '--with-checkpoints', '--format', 'csv'],
    auditorEnv,
  );
  expect(csv).toMatchObject({ code: 2 });
  expect(csv.stderr).toContain('--with-checkpoints writes JSON Lines');
  const filtered = await runCli(
    ['audit', 'export', '--since', '1d', '--with-checkpoints', '--server', 'admin'],
    auditorEnv,
  );
  expect(filtered.stderr).toContain('--with-checkpoints exports whole checkpoints');
  const noKey = await runCli(['audit', 'verify', '--file', join(dir, 'kit.jsonl')], auditorEnv);
  expect(noKey.stderr).toContain('--file needs --public-key');
  const notPem = join(dir, 'not.pem');
  await writeFile(notPem, 'hello');
  const bad = await runCli(['audit', 'verify', '--public-key', notPem], auditorEnv);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('is no Ed25519 public key in PEM');
});

it('has each checkpoint timestamped at BULKHEAD_AUDIT_TSA_URL, and verify --tsa-cert checks the timestamps', async () => {
  const tsa = await startTsa(dir, 'tsa');
  const other = await startTsa(dir, 'other-tsa');
  try {
    await createAuditWriter(db.sql).append({
      server: 'admin',
      method: 'tools/call',
      tool: 'get_ticket',
      outcome: 'ok',
      requestId: 'req-6',
      durationMs: 6,
    });
    const noSigner = await runCli(['audit', 'seal'], {
      ...sealerEnv,
      BULKHEAD_AUDIT_SIGNING_KEY_FILE: '',
      BULKHEAD_AUDIT_TSA_URL: tsa.url,
    });
    expect(noSigner.code).toBe(1);
    expect(noSigner.stderr).toContain('set BULKHEAD_AUDIT_SIGNING_KEY_FILE as well');
    const sealed = await runCli(['audit', 'seal'], { ...sealerEnv, BULKHEAD_AUDIT_TSA_URL: tsa.url });
    expect(sealed).toMatchObject({ code: 0, stderr: '' });
    const pub = ['--public-key', join(dir, 'keys', 'audit-signing.pub')];
    const ok = await runCli(['audit', 'verify', ...pub, '--tsa-cert', tsa.certFile], auditorEnv);
    expect(ok.code).toBe(0);
    // Both checkpoints were made minutes ago at most: the first one too is timestamped.
    expect(ok.stdout).toMatch(
      /^Signed checkpoints: 2 \(seals 1–2\), covering events #1–#6; key [0-9a-f]{64}; 2 timestamped by the TSA;/,
    );
    const wrong = await runCli(
      ['audit', 'verify', ...pub, '--tsa-cert', other.certFile, '--json'],
      auditorEnv,
    );
    expect(wrong.code).toBe(1);
    expect(
      JSON.parse(wrong.stdout).breaks.map((b: { kind: string; sealNo: number }) => [b.kind, b.sealNo]),
    ).toEqual([
      ['checkpoint_timestamp', 1],
      ['checkpoint_timestamp', 2],
    ]);
    const usage = await runCli(['audit', 'verify', '--tsa-cert', tsa.certFile], auditorEnv);
    expect(usage.stderr).toContain('--tsa-cert needs --public-key');
  } finally {
    await tsa.close();
    await other.close();
  }
});
