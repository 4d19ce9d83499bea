import { isAbsolute, relative, resolve } from 'node:path';
import { group, parse, type Command } from '../command.ts';
import { withDatabase } from '../database.ts';
import { CliError, UsageError, type Io } from '../io.ts';
import { IngestError, ingestFolder, type IngestReport } from '@bulkhead/domain';

/** The report as `--json` prints it (snake_case, like every JSON the CLI prints). */
function json(report: IngestReport) {
  return {
    folder: report.folder,
    dry_run: report.dryRun,
    files: report.files,
    added: report.added,
    updated: report.updated,
    unchanged: report.unchanged,
    removed: report.removed,
    invalid: report.invalid,
    stale: report.stale,
    problems: report.problems,
    changes: report.changes.map((c) => ({ doc_id: c.docId, file: c.file, action: c.action })),
  };
}

/** The one-line summary of an ingest, shared by `kb ingest` and the first `start`; `cwd` shortens the folder. */
export function summary(report: IngestReport, cwd: string): string {
  const rel = relative(cwd, report.folder);
  const where = rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? report.folder : rel;
  return (
    `${report.dryRun ? 'Dry run, nothing written — ' : ''}${where}: ${report.files} files, ` +
    `${report.added} added, ${report.updated} updated, ${report.unchanged} unchanged, ` +
    `${report.removed} removed, ${report.invalid} invalid`
  );
}

/** Problems and stale documents, one line each, for stderr. */
export function printDetails(io: Io, report: IngestReport): void {
  for (const p of report.problems) io.err(`invalid: ${p.file}: ${p.field}: ${p.message} (skipped)`);
  if (report.stale.length)
    io.err(
      `${report.stale.length} stored document(s) from this folder have no file any more (${report.stale.join(', ')}); --prune removes them.`,
    );
}

const ingestCommand: Command = {
  name: 'ingest',
  summary: 'load markdown documents with front matter into the knowledge base',
  help: `Usage: bulkhead kb ingest <folder> [--prune] [--dry-run] [--json]

Reads every .md file under <folder> (recursively) and stores it in
kb_documents, where dev-knowledge searches it. Each file starts with front
matter:

  ---
  title: Rotate a leaked token
  kind: runbook            # adr | runbook | guide | api
  tags: [tokens, security]
  updated: 2026-03-14
  ---

The doc id is the file name without .md (lower-case, digits and -). New
documents are added, changed ones updated, unchanged ones left alone, so
running it twice changes nothing the second time. A file with bad front
matter is reported with the field at fault and skipped; the exit code is then
1. Everything happens in one transaction. Progress goes to stderr.

Options:
  --prune     remove stored documents that came from this folder and whose file is gone
  --dry-run   report what would change, write nothing
  --json      print the report as JSON on stdout`,
  async run(argv, { env, io }) {
    const { values, positionals } = parse(
      argv,
      {
        prune: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
      true,
    );
    if (positionals.length !== 1)
      throw new UsageError(
        positionals.length ? 'give exactly one folder' : 'the folder to ingest is missing',
      );
    const report = await withDatabase(env, io, async ({ sql }) => {
      try {
        return await ingestFolder(sql, resolve(env.cwd, positionals[0]!), {
          prune: values.prune,
          dryRun: values['dry-run'],
          onProgress: ({ index, total, file }) => io.progress(`[${index}/${total}] ${file}`),
        });
      } catch (err) {
        if (err instanceof IngestError) throw new CliError(err.message);
        throw err;
      }
    });
    if (values.json) io.out(JSON.stringify(json(report), null, 2));
    else io.out(summary(report, env.cwd));
    printDetails(io, report);
    return report.invalid ? 1 : 0;
  },
};

/** `bulkhead kb`: the engineering knowledge base that dev-knowledge serves. */
export const kbCommand: Command = group('kb', 'the engineering knowledge base (dev-knowledge)', [
  ingestCommand,
]);
