import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { type Sql } from '@bulkhead/db';
import {
  deleteDocuments,
  listDocumentStates,
  lockKnowledgeIngest,
  upsertDocument,
  type KbDocumentState,
} from './documents.ts';
import { parseDocument } from './front-matter.ts';

/** What {@link ingestFolder} does besides adding and updating. */
export interface IngestOptions {
  /** Remove stored documents that came from this folder and whose file is gone. */
  prune?: boolean;
  /** Work out every change, write none. */
  dryRun?: boolean;
  /** Called before each file is handled: `index` counts from 1, `file` is relative to the folder. */
  onProgress?: (progress: { index: number; total: number; file: string }) => void;
}

/** A file that was skipped because it is not a valid document. */
export interface IngestProblem {
  /** Relative to the folder, with `/` separators. */
  file: string;
  field: string;
  message: string;
}

/** One document that was (or, in a dry run, would be) written or removed. */
export interface IngestChange {
  docId: string;
  /** Relative to the folder; for a removed document, where its file used to be. */
  file: string;
  action: 'added' | 'updated' | 'removed';
}

/** The outcome of one ingest run. */
export interface IngestReport {
  /** The folder, resolved to an absolute path. */
  folder: string;
  dryRun: boolean;
  /** Markdown files found. */
  files: number;
  added: number;
  updated: number;
  unchanged: number;
  removed: number;
  invalid: number;
  /** Documents from this folder whose file is gone, left in place because `prune` was not set. */
  stale: string[];
  problems: IngestProblem[];
  changes: IngestChange[];
}

/** The folder cannot be ingested at all (missing, not a folder, no markdown in it). */
export class IngestError extends Error {
  override readonly name = 'IngestError';
}

/**
 * Loads every `.md` file under `folder` (recursively; dot-folders and
 * node_modules skipped) into `kb_documents`, in one transaction: new ids are
 * added, documents whose content or file changed are updated, the rest are
 * left untouched, so a second run over the same files changes nothing. A file
 * with bad front matter is reported and skipped, and so is a file whose doc id
 * is already stored from a file outside `folder`. With `prune`, documents that
 * were ingested from this folder (by their stored source path) and whose file
 * is gone are removed; documents from other folders are never touched.
 */
export async function ingestFolder(
  sql: Sql,
  folder: string,
  options: IngestOptions = {},
): Promise<IngestReport> {
  const root = resolve(folder);
  const info = await stat(root).catch(() => undefined);
  if (!info) throw new IngestError(`${folder}: no such folder`);
  if (!info.isDirectory()) throw new IngestError(`${folder}: not a folder`);
  const files = await markdownFiles(root);
  if (!files.length) throw new IngestError(`${folder}: no .md files in it, nothing to ingest`);

  const report: IngestReport = {
    folder: root,
    dryRun: Boolean(options.dryRun),
    files: files.length,
    added: 0,
    updated: 0,
    unchanged: 0,
    removed: 0,
    invalid: 0,
    stale: [],
    problems: [],
    changes: [],
  };
  const present = new Set(files);
  const seen = new Map<string, string>();

  await sql.begin(async (transaction) => {
    // A transaction runs the same queries as a pool; postgres.js only types it apart.
    const tx = transaction as unknown as Sql;
    await lockKnowledgeIngest(tx);
    const stored = new Map((await listDocumentStates(tx)).map((s) => [s.id, s]));
    for (const [i, path] of files.entries()) {
      const file = relative(root, path).split(sep).join('/');
      options.onProgress?.({ index: i + 1, total: files.length, file });
      const parsed = parseDocument(basename(path), await readFile(path, 'utf8'));
      if (!parsed.ok) {
        report.invalid++;
        report.problems.push({ file, ...parsed.problem });
        continue;
      }
      const { doc } = parsed;
      const before = stored.get(doc.id);
      const taken = idTaken(doc.id, seen.get(doc.id), before, root);
      if (taken) {
        report.invalid++;
        report.problems.push({ file, field: 'file name', message: taken });
        continue;
      }
      seen.set(doc.id, file);
      if (before && before.contentHash === doc.contentHash && before.sourcePath === path) {
        report.unchanged++;
        continue;
      }
      const action = before ? 'updated' : 'added';
      report[action]++;
      report.changes.push({ docId: doc.id, file, action });
      if (!options.dryRun)
        await upsertDocument(tx, {
          id: doc.id,
          title: doc.title,
          kind: doc.kind,
          tags: doc.tags,
          body: doc.body,
          sourcePath: path,
          contentHash: doc.contentHash,
          updatedOn: doc.updated,
        });
    }

    const gone = [...stored.values()].filter(
      (s) => s.sourcePath?.startsWith(root + sep) && !present.has(s.sourcePath) && !seen.has(s.id),
    );
    await pruneGone(tx, gone, root, options, report);
  });
  return report;
}

/**
 * Why a document's id cannot be stored from this file (undefined when it can): another file of this
 * run has it (`twin`), or it is stored from a file outside the folder. Ids are file names, unique
 * across folders: the same name in another folder is another document, and replacing it would look
 * like an ordinary update.
 */
function idTaken(
  id: string,
  twin: string | undefined,
  before: KbDocumentState | undefined,
  root: string,
): string | undefined {
  if (twin) return `doc id ${id} is already used by ${twin}`;
  if (before?.sourcePath && !before.sourcePath.startsWith(root + sep))
    return (
      `doc id ${id} already comes from ${before.sourcePath}, outside this folder — rename this file, ` +
      `or remove that document first (delete its file, then kb ingest ${dirname(before.sourcePath)} --prune)`
    );
  return undefined;
}

/** The documents of this folder whose file is gone: removed with `prune`, else reported as stale. */
async function pruneGone(
  tx: Sql,
  gone: KbDocumentState[],
  root: string,
  options: IngestOptions,
  report: IngestReport,
): Promise<void> {
  if (!options.prune) {
    report.stale = gone.map((s) => s.id);
    return;
  }
  for (const s of gone)
    report.changes.push({
      docId: s.id,
      file: relative(root, s.sourcePath!).split(sep).join('/'),
      action: 'removed',
    });
  report.removed = options.dryRun
    ? gone.length
    : await deleteDocuments(
        tx,
        gone.map((s) => s.id),
      );
}

/** Every `.md` file under `dir`, sorted, as absolute paths. */
async function markdownFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (current: string) => {
    const entries = await readdir(current, { withFileTypes: true });
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = join(current, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.endsWith('.md')) found.push(path);
    }
  };
  await walk(dir);
  return found.sort();
}
