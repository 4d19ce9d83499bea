import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../run-cli.ts';

let db: TestDatabase;
let dir: string;
let env: Record<string, string>;

const front = (title: string, kind: string) =>
  `---\ntitle: ${title}\nkind: ${kind}\ntags: [demo]\nupdated: 2026-11-01\n---\n\nBody of ${title}.\n`;

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'bh-kb-cli-'));
  env = { DATABASE_URL: db.url };
  await writeFile(join(dir, 'adr-0001-first.md'), front('First decision', 'adr'));
  await writeFile(join(dir, 'runbook-second.md'), front('Second', 'runbook'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
  await db.drop();
});

describe('bulkhead kb ingest', () => {
  it('ingests a folder, prints the report as JSON and progress on stderr, and is idempotent', async () => {
    const first = await runCli(['kb', 'ingest', dir, '--json'], env);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toEqual({
      folder: dir,
      dry_run: false,
      files: 2,
      added: 2,
      updated: 0,
      unchanged: 0,
      removed: 0,
      invalid: 0,
      stale: [],
      problems: [],
      changes: [
        { doc_id: 'adr-0001-first', file: 'adr-0001-first.md', action: 'added' },
        { doc_id: 'runbook-second', file: 'runbook-second.md', action: 'added' },
      ],
    });
    expect(first.stderr.split('\n')).toEqual(['[1/2] adr-0001-first.md', '[2/2] runbook-second.md', '']);
    expect((await db.sql`select id from kb_documents order by id`).map((r) => r.id)).toEqual([
      'adr-0001-first',
      'runbook-second',
    ]);

    const second = await runCli(['kb', 'ingest', dir], env);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(`${dir}: 2 files, 0 added, 0 updated, 2 unchanged, 0 removed, 0 invalid\n`);
  });

  it('resolves a relative folder from where `pnpm bulkhead` was run (INIT_CWD)', async () => {
    const run = await runCli(['kb', 'ingest', basename(dir), '--dry-run'], {
      ...env,
      INIT_CWD: dirname(dir),
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `Dry run, nothing written — ${basename(dir)}: 2 files, 0 added, 0 updated, 2 unchanged, 0 removed, 0 invalid\n`,
    );
  });

  it("resolves a relative folder from the shell's PWD under `pnpm exec` (no INIT_CWD), not elsewhere", async () => {
    const fromPnpm = await runCli(['kb', 'ingest', basename(dir), '--dry-run'], {
      ...env,
      INIT_CWD: undefined,
      PWD: dirname(dir),
      PNPM_PACKAGE_NAME: 'bulkhead',
    });
    expect(fromPnpm.code).toBe(0);
    expect(fromPnpm.stdout).toContain(`${basename(dir)}: 2 files, 0 added, 0 updated, 2 unchanged`);
    // Without pnpm, PWD may be stale (nothing but a shell keeps it): the process's own directory counts.
    const direct = await runCli(['kb', 'ingest', basename(dir), '--dry-run'], {
      ...env,
      INIT_CWD: undefined,
      PNPM_PACKAGE_NAME: undefined,
      PWD: dirname(dir),
    });
    expect(direct.code).not.toBe(0);
  });

  it('exits 1 when a file is invalid, naming the file and the field, and still ingests the others', async () => {
    await writeFile(join(dir, 'guide-broken.md'), front('Broken', 'howto'));
    try {
      const run = await runCli(['kb', 'ingest', dir, '--json'], env);
      expect(run.code).toBe(1);
      const report = JSON.parse(run.stdout);
      expect(report).toMatchObject({ files: 3, unchanged: 2, invalid: 1 });
      expect(report.problems).toEqual([
        {
          file: 'guide-broken.md',
          field: 'kind',
          message: 'got "howto", expected one of adr, runbook, guide, api',
        },
      ]);
      expect(run.stderr).toContain(
        'invalid: guide-broken.md: kind: got "howto", expected one of adr, runbook, guide, api (skipped)\n',
      );
    } finally {
      await rm(join(dir, 'guide-broken.md'));
    }
  });

  it('reports a removed file as stale, and removes it with --prune', async () => {
    await rm(join(dir, 'runbook-second.md'));
    const stale = await runCli(['kb', 'ingest', dir], env);
    expect(stale.code).toBe(0);
    expect(stale.stderr).toContain(
      '1 stored document(s) from this folder have no file any more (runbook-second); --prune removes them.',
    );
    const dry = await runCli(['kb', 'ingest', dir, '--prune', '--dry-run'], env);
    expect(dry.stdout).toBe(
      `Dry run, nothing written — ${dir}: 1 files, 0 added, 0 updated, 1 unchanged, 1 removed, 0 invalid\n`,
    );
    expect((await db.sql`select count(*)::int as n from kb_documents`)[0]!.n).toBe(2);
    const pruned = await runCli(['kb', 'ingest', dir, '--prune', '--json'], env);
    expect(JSON.parse(pruned.stdout)).toMatchObject({
      removed: 1,
      changes: [{ doc_id: 'runbook-second', file: 'runbook-second.md', action: 'removed' }],
    });
    expect((await db.sql`select id from kb_documents`).map((r) => r.id)).toEqual(['adr-0001-first']);
  });

  it('refuses a missing folder with exit code 1 and a missing argument with exit code 2', async () => {
    const missing = await runCli(['kb', 'ingest', join(dir, 'nope')], env);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toBe(`bulkhead kb: ${join(dir, 'nope')}: no such folder\n`);
    const usage = await runCli(['kb', 'ingest'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('bulkhead kb: the folder to ingest is missing');
  });
});
