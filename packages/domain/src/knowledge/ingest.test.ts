import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { ingestFolder, IngestError } from './ingest.ts';

/** The sample documents dev-knowledge ships (read as files). */
const shippedDocs = fileURLToPath(new URL('../../../../docs/handbook', import.meta.url));

let db: TestDatabase;
let dir: string;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bh-kb-'));
  await db.sql`delete from kb_documents`;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function doc(
  front: { title?: string; kind?: string; tags?: string; updated?: string; extra?: string },
  body = 'Some text.',
) {
  const lines = ['---'];
  if (front.title !== undefined) lines.push(`title: ${front.title}`);
  if (front.kind !== undefined) lines.push(`kind: ${front.kind}`);
  if (front.tags !== undefined) lines.push(`tags: ${front.tags}`);
  if (front.updated !== undefined) lines.push(`updated: ${front.updated}`);
  if (front.extra !== undefined) lines.push(front.extra);
  return `${lines.join('\n')}\n---\n\n${body}\n`;
}
const good = (title: string, body = 'Some text.') =>
  doc({ title, kind: 'runbook', tags: '[tokens, security]', updated: '2026-09-14' }, body);

async function write(rel: string, text: string) {
  await mkdir(join(dir, rel, '..'), { recursive: true });
  await writeFile(join(dir, rel), text);
}

describe('ingestFolder', () => {
  it('adds every document, recursively, with its front matter and source path', async () => {
    await write('runbook-rotate-token.md', good('Rotate a token', '## Steps\n\nRevoke it.'));
    await write(
      'nested/deeper/guide-onboarding.md',
      doc({ title: 'Onboarding', kind: 'guide', tags: '[]', updated: '2026-01-02' }),
    );
    await write('notes.txt', 'not markdown');
    await write('.drafts/runbook-secret.md', good('Hidden draft'));
    const progress: string[] = [];
    const report = await ingestFolder(db.sql, dir, {
      onProgress: ({ index, total, file }) => progress.push(`[${index}/${total}] ${file}`),
    });
    expect(progress).toEqual(['[1/2] nested/deeper/guide-onboarding.md', '[2/2] runbook-rotate-token.md']);
    expect(report).toMatchObject({
      files: 2,
      added: 2,
      updated: 0,
      unchanged: 0,
      removed: 0,
      invalid: 0,
      stale: [],
      problems: [],
    });
    expect(report.changes).toEqual([
      { docId: 'guide-onboarding', file: 'nested/deeper/guide-onboarding.md', action: 'added' },
      { docId: 'runbook-rotate-token', file: 'runbook-rotate-token.md', action: 'added' },
    ]);
    const rows = await db.sql`
      select id, title, kind, tags, body, source_path, to_char(updated_on, 'YYYY-MM-DD') as updated, length(content_hash) as hash_len
      from kb_documents order by id`;
    expect(rows).toEqual([
      {
        id: 'guide-onboarding',
        title: 'Onboarding',
        kind: 'guide',
        tags: [],
        body: 'Some text.',
        source_path: join(dir, 'nested/deeper/guide-onboarding.md'),
        updated: '2026-01-02',
        hash_len: 64,
      },
      {
        id: 'runbook-rotate-token',
        title: 'Rotate a token',
        kind: 'runbook',
        tags: ['tokens', 'security'],
        body: '## Steps\n\nRevoke it.',
        source_path: join(dir, 'runbook-rotate-token.md'),
        updated: '2026-09-14',
        hash_len: 64,
      },
    ]);
  });

  it('is idempotent: a second run over the same files writes nothing', async () => {
    await write('runbook-a.md', good('Document A'));
    await write('runbook-b.md', good('Document B'));
    await ingestFolder(db.sql, dir);
    const [before] = await db.sql`select max(ingested_at) as at from kb_documents`;
    const again = await ingestFolder(db.sql, dir);
    expect(again).toMatchObject({ added: 0, updated: 0, unchanged: 2, removed: 0, invalid: 0, changes: [] });
    const [after] = await db.sql`select max(ingested_at) as at from kb_documents`;
    expect(after!.at).toEqual(before!.at);
  });

  it('updates a document whose text or front matter changed, and only that one', async () => {
    await write('runbook-a.md', good('Document A'));
    await write('runbook-b.md', good('Document B'));
    await ingestFolder(db.sql, dir);
    await write('runbook-a.md', good('Document A', 'New text.'));
    await write('runbook-b.md', good('Document B').replace('[tokens, security]', '[tokens]'));
    const report = await ingestFolder(db.sql, dir);
    expect(report).toMatchObject({ added: 0, updated: 2, unchanged: 0 });
    const rows = await db.sql`select id, body, tags from kb_documents order by id`;
    expect(rows).toEqual([
      { id: 'runbook-a', body: 'New text.', tags: ['tokens', 'security'] },
      { id: 'runbook-b', body: 'Some text.', tags: ['tokens'] },
    ]);
  });

  it('reports documents whose file is gone, and removes them only with prune and only from this folder', async () => {
    const other = await mkdtemp(join(tmpdir(), 'bh-kb-other-'));
    try {
      await writeFile(join(other, 'guide-elsewhere.md'), good('From another folder'));
      await ingestFolder(db.sql, other);
      await write('runbook-keep.md', good('Keep'));
      await write('sub/runbook-gone.md', good('Gone soon'));
      await ingestFolder(db.sql, dir);
      await unlink(join(dir, 'sub/runbook-gone.md'));

      const report = await ingestFolder(db.sql, dir);
      expect(report).toMatchObject({ unchanged: 1, removed: 0, stale: ['runbook-gone'] });
      expect((await db.sql`select id from kb_documents order by id`).map((r) => r.id)).toEqual([
        'guide-elsewhere',
        'runbook-gone',
        'runbook-keep',
      ]);

      const dry = await ingestFolder(db.sql, dir, { prune: true, dryRun: true });
      expect(dry).toMatchObject({ dryRun: true, removed: 1, stale: [] });
      expect(dry.changes).toEqual([
        { docId: 'runbook-gone', file: 'sub/runbook-gone.md', action: 'removed' },
      ]);
      expect((await db.sql`select count(*)::int as n from kb_documents`)[0]!.n).toBe(3);

      const pruned = await ingestFolder(db.sql, dir, { prune: true });
      expect(pruned).toMatchObject({ removed: 1, unchanged: 1 });
      expect((await db.sql`select id from kb_documents order by id`).map((r) => r.id)).toEqual([
        'guide-elsewhere',
        'runbook-keep',
      ]);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('refuses a file whose doc id already comes from another folder, and leaves that document alone', async () => {
    const other = await mkdtemp(join(tmpdir(), 'bh-kb-other-'));
    try {
      await writeFile(join(other, 'runbook-shared.md'), good('From the other folder'));
      await ingestFolder(db.sql, other);
      await write('runbook-shared.md', good('Same name in this folder'));
      await write('runbook-own.md', good('Own'));
      const problem = {
        file: 'runbook-shared.md',
        field: 'file name',
        message:
          `doc id runbook-shared already comes from ${join(other, 'runbook-shared.md')}, outside this folder — ` +
          `rename this file, or remove that document first (delete its file, then kb ingest ${other} --prune)`,
      };
      const dry = await ingestFolder(db.sql, dir, { dryRun: true });
      expect(dry).toMatchObject({ files: 2, added: 1, updated: 0, invalid: 1, problems: [problem] });

      const report = await ingestFolder(db.sql, dir, { prune: true });
      expect(report).toMatchObject({
        files: 2,
        added: 1,
        updated: 0,
        removed: 0,
        invalid: 1,
        problems: [problem],
      });
      expect(report.changes).toEqual([{ docId: 'runbook-own', file: 'runbook-own.md', action: 'added' }]);
      const rows = await db.sql`select id, title, source_path from kb_documents order by id`;
      expect(rows).toEqual([
        { id: 'runbook-own', title: 'Own', source_path: join(dir, 'runbook-own.md') },
        {
          id: 'runbook-shared',
          title: 'From the other folder',
          source_path: join(other, 'runbook-shared.md'),
        },
      ]);

      // Its own folder still updates it.
      await writeFile(join(other, 'runbook-shared.md'), good('Changed where it lives'));
      expect(await ingestFolder(db.sql, other)).toMatchObject({ updated: 1, invalid: 0 });
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });

  it('writes nothing on a dry run but counts what it would do', async () => {
    await write('runbook-a.md', good('Document A'));
    const report = await ingestFolder(db.sql, dir, { dryRun: true });
    expect(report).toMatchObject({ dryRun: true, added: 1 });
    expect((await db.sql`select count(*)::int as n from kb_documents`)[0]!.n).toBe(0);
  });

  it('reports a bad file with its field and skips it, ingesting the rest', async () => {
    await write('runbook-fine.md', good('Fine'));
    await write(
      'runbook-kind.md',
      doc({ title: 'Bad kind', kind: 'howto', tags: '[a]', updated: '2026-01-01' }),
    );
    await write(
      'runbook-date.md',
      doc({ title: 'Bad date', kind: 'runbook', tags: '[a]', updated: '14.09.2026' }),
    );
    await write('runbook-notitle.md', doc({ kind: 'runbook', tags: '[a]', updated: '2026-01-01' }));
    await write(
      'runbook-tag.md',
      doc({ title: 'Bad tag', kind: 'runbook', tags: '[ok, Not OK]', updated: '2026-01-01' }),
    );
    await write(
      'runbook-extra.md',
      doc({ title: 'Extra', kind: 'runbook', tags: '[a]', updated: '2026-01-01', extra: 'tag: a' }),
    );
    await write('runbook-nofront.md', '# Just markdown\n');
    await write('runbook-yaml.md', '---\ntitle: [unclosed\n---\nBody\n');
    await write('runbook-empty.md', good('Empty', ''));
    await write('Bad Name.md', good('Bad name'));
    await write('a/runbook-fine.md', good('Same id, in a subfolder'));
    const report = await ingestFolder(db.sql, dir);
    // Files are handled in path order, so a/runbook-fine.md is the one that holds the id.
    expect(report).toMatchObject({ files: 11, added: 1, invalid: 10 });
    expect(report.changes).toEqual([{ docId: 'runbook-fine', file: 'a/runbook-fine.md', action: 'added' }]);
    expect(report.problems).toEqual([
      {
        file: 'Bad Name.md',
        field: 'file name',
        message: '"Bad Name.md" is not a doc id: lower-case letters, digits and "-", 3-101 long',
      },
      {
        file: 'runbook-date.md',
        field: 'updated',
        message: 'got "14.09.2026", expected a date written YYYY-MM-DD',
      },
      {
        file: 'runbook-empty.md',
        field: 'body',
        message: 'empty: write the document below the front matter',
      },
      {
        file: 'runbook-extra.md',
        field: 'tag',
        message: 'not a front matter field (title, kind, tags, updated)',
      },
      {
        file: 'runbook-fine.md',
        field: 'file name',
        message: 'doc id runbook-fine is already used by a/runbook-fine.md',
      },
      {
        file: 'runbook-kind.md',
        field: 'kind',
        message: 'got "howto", expected one of adr, runbook, guide, api',
      },
      {
        file: 'runbook-nofront.md',
        field: 'front matter',
        message: 'missing: the file must start with a "---" line, YAML, and "---"',
      },
      { file: 'runbook-notitle.md', field: 'title', message: 'missing' },
      {
        file: 'runbook-tag.md',
        field: 'tags.1',
        message: 'got "Not OK", expected lower-case words joined by "-", at most 40 characters',
      },
      { file: 'runbook-yaml.md', field: 'front matter', message: expect.stringMatching(/^not valid YAML: /) },
    ]);
  });

  it('refuses a folder that does not exist or holds no markdown, changing nothing', async () => {
    await expect(ingestFolder(db.sql, join(dir, 'missing'))).rejects.toThrow(
      new IngestError(`${join(dir, 'missing')}: no such folder`),
    );
    await write('readme.txt', 'hi');
    await expect(ingestFolder(db.sql, dir, { prune: true })).rejects.toThrow(
      `${dir}: no .md files in it, nothing to ingest`,
    );
  });
});

describe('the shipped sample documents', () => {
  it('are all valid: 12 ADRs, 12 runbooks, 10 guides, 8 API references', async () => {
    const report = await ingestFolder(db.sql, shippedDocs);
    expect(report).toMatchObject({ files: 42, added: 42, invalid: 0, problems: [] });
    const kinds = await db.sql`select kind, count(*)::int as n from kb_documents group by kind order by kind`;
    expect(kinds).toEqual([
      { kind: 'adr', n: 12 },
      { kind: 'api', n: 8 },
      { kind: 'guide', n: 10 },
      { kind: 'runbook', n: 12 },
    ]);
    const long = await db.sql`
      select id from kb_documents
      where array_length(regexp_split_to_array(trim(body), '\\s+'), 1) > 2500 order by id`;
    expect(long.map((r) => r.id)).toEqual(['api-cli-reference', 'runbook-incident-response']);
  });
});
