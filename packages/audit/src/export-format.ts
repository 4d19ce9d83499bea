import { AUDIT_COLUMN_NAMES, eventRow } from './columns.ts';
import type { AuditEvent } from './events.ts';

/** The formats of an export: one JSON object a line, or CSV with a header line. */
export const EXPORT_FORMATS = ['jsonl', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/**
 * The columns of an export (`bulkhead audit export`, the console's) and of `audit tail --json`, in the
 * order scripts have read since the log was a hash chain: the event's columns with `db_role` and
 * `trace_id` (added later) last, and the chain's columns (`chain_seq`, `prev_hash`, `hash`), kept for
 * those scripts and null now that the log is sealed.
 */
const EXPORT_COLUMNS = [
  'seq',
  'id',
  'at',
  'server',
  'chain_seq',
  ...AUDIT_COLUMN_NAMES.filter((c) => !['seq', 'id', 'at', 'server', 'db_role', 'trace_id'].includes(c)),
  'prev_hash',
  'hash',
  'db_role',
  'trace_id',
] as const;

/** The JSON form of an event for scripts (snake_case, ISO time). */
export function eventJson(event: AuditEvent): Record<string, unknown> {
  const row = {
    ...eventRow(event),
    at: event.at.toISOString(),
    chain_seq: null,
    prev_hash: null,
    hash: null,
  };
  return Object.fromEntries(EXPORT_COLUMNS.map((c) => [c, row[c]]));
}

// A spreadsheet opening the CSV runs a cell that starts like a formula (`=HYPERLINK(…)` in a client's
// name or a tool's argument): such text is written with a leading apostrophe, which spreadsheets read
// as "this is text" (OWASP's advice for CSV injection). Numbers and JSON are never formulas.
const FORMULA = /^[=+\-@\t\r]/;

/**
 * One CSV cell: empty for null, objects as JSON, text that would start a formula behind an apostrophe,
 * quoted when it holds a quote, comma, tab or line break.
 */
function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value === 'string' && FORMULA.test(text)) text = `'${text}`;
  return /[",\t\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** What an export starts with: the CSV header line, nothing for JSON Lines. */
export function exportHeader(format: ExportFormat): string {
  return format === 'csv' ? `${EXPORT_COLUMNS.join(',')}\n` : '';
}

/** One event as a line of an export, line break included. */
export function exportLine(event: AuditEvent, format: ExportFormat): string {
  const row = eventJson(event);
  return format === 'csv'
    ? `${EXPORT_COLUMNS.map((c) => csvCell(row[c])).join(',')}\n`
    : `${JSON.stringify(row)}\n`;
}
