import type { AuditEvent, StoredEventFields } from './events.ts';

/**
 * The columns of `audit_events` an event is made of: each field of {@link AuditEvent} with its column,
 * in the order the seal lists them. Writer, reader, sealer and `audit export` take the event's columns
 * from here. The seal covers exactly these columns: the first ones always (`SEALED_COLUMNS`), those in
 * {@link SEALED_WHEN_SET} only when they hold a value, so that an event without one (every event written
 * before the column existed) is sealed as before. Dropping or renaming a column is a new seal format,
 * which needs a way to verify the seals made before it.
 */
export const AUDIT_COLUMNS = {
  seq: 'seq',
  id: 'id',
  at: 'at',
  server: 'server',
  dbRole: 'db_role',
  tokenId: 'token_id',
  tokenLabel: 'token_label',
  clientName: 'client_name',
  clientVersion: 'client_version',
  method: 'method',
  tool: 'tool',
  arguments: 'arguments',
  outcome: 'outcome',
  resultSummary: 'result_summary',
  durationMs: 'duration_ms',
  requestId: 'request_id',
  approvalId: 'approval_id',
  injectionSuspected: 'injection_suspected',
  traceId: 'trace_id',
} as const satisfies Record<keyof AuditEvent, string>;

type Field = keyof AuditEvent;
/** A column of an audit event. */
export type AuditColumn = (typeof AUDIT_COLUMNS)[Field];

/** An event as a row of `audit_events`: every field under its column's name. */
export type AuditEventRow = { [F in Field as (typeof AUDIT_COLUMNS)[F]]: AuditEvent[F] };

/** Fields the database stamps on insert (number, time, writing role): the writer never sends them. */
type StampedField = Exclude<Field, keyof StoredEventFields>;
const STAMPED: readonly StampedField[] = ['seq', 'at', 'dbRole'];

/** An event's row as the writer inserts it: the columns the database does not stamp. */
export type StoredEventRow = Omit<AuditEventRow, (typeof AUDIT_COLUMNS)[StampedField]>;

const FIELDS = Object.keys(AUDIT_COLUMNS) as Field[];
const STORED_FIELDS = FIELDS.filter((f): f is keyof StoredEventFields => !(STAMPED as Field[]).includes(f));

/**
 * Columns added after seals existed (0042: `trace_id`): sealed when they hold a value and left out of
 * the sealed body when null, so the body of an older event, and so its seal, is unchanged.
 */
export const SEALED_WHEN_SET: readonly AuditColumn[] = [AUDIT_COLUMNS.traceId];

/** Every column of an event, in order. */
export const AUDIT_COLUMN_NAMES: readonly AuditColumn[] = FIELDS.map((f) => AUDIT_COLUMNS[f]);

/** The columns the writer sends, in order. */
export const STORED_COLUMN_NAMES: readonly AuditColumn[] = STORED_FIELDS.map((f) => AUDIT_COLUMNS[f]);

/** An event as its row. */
export function eventRow(event: AuditEvent): AuditEventRow {
  return Object.fromEntries(FIELDS.map((f) => [AUDIT_COLUMNS[f], event[f]])) as AuditEventRow;
}

/** The row the writer inserts for an event. */
export function storedRow(event: StoredEventFields): StoredEventRow {
  return Object.fromEntries(STORED_FIELDS.map((f) => [AUDIT_COLUMNS[f], event[f]])) as StoredEventRow;
}
