import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

let db: TestDatabase;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { DATABASE_URL: db.url, BULKHEAD_OPERATOR: 'ops:ana' };
});
afterAll(async () => {
  await db.drop();
});

const accepts = async (token: string) =>
  (await db.sql<{ ok: boolean }[]>`select bulkhead_scim_check(${token}) as ok`)[0]!.ok;

it('bulkhead scim set-token makes a token, shows it once and stores only its hash; --file stores one given', async () => {
  const made = await runCli(['scim', 'set-token'], env);
  expect(made.code).toBe(0);
  const token = made.stdout.trim().split('\n').at(-1)!;
  expect(token).toMatch(/^bh_scim_[A-Za-z0-9_-]{43}$/);
  expect(await accepts(token)).toBe(true);
  const [stored] = await db.sql<
    { hex: string }[]
  >`select encode(token_hash, 'hex') as hex from bulkhead_scim_token`;
  expect(stored!.hex).not.toContain(token);

  const dir = mkdtempSync(join(tmpdir(), 'bulkhead-scim-cli-'));
  const given = 'g'.repeat(40);
  writeFileSync(join(dir, 'token'), `${given}\n`);
  writeFileSync(join(dir, 'short'), 'short\n');
  expect((await runCli(['scim', 'set-token', '--file', join(dir, 'token')], env)).code).toBe(0);
  expect([await accepts(given), await accepts(token)]).toEqual([true, false]);
  const short = await runCli(['scim', 'set-token', '--file', join(dir, 'short')], env);
  expect(short.code).not.toBe(0);
  expect(short.stderr).toContain('a SCIM token has at least 32 characters');
  expect(await accepts(given)).toBe(true);
});
