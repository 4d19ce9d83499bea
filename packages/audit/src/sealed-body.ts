import { createHmac } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { AUDIT_COLUMN_NAMES, AUDIT_COLUMNS, SEALED_WHEN_SET, type AuditColumn } from './columns.ts';

// What a seal covers of each event: its sealed body, rendered by PostgreSQL from the stored columns,
// and the keyed digest of that body.

/**
 * How the sealed body of an event is rendered: 1, every column as stored; 2 (every seal since 0048), a
 * text or jsonb column larger than {@link DIGESTED_ABOVE_BYTES} as the SHA-256 and size of its stored
 * text, so that no row stalls the sealer. A row a format-1 seal could seal renders the same in both.
 */
export type BodyFormat = 1 | 2;
/** The format every new seal is made in. */
export const BODY_FORMAT: BodyFormat = 2;
/**
 * Above this many bytes of text a column is sealed by its digest (format 2): more than the database lets
 * any column of a row written since 0048 hold, so only older rows are (those that stalled the sealer).
 */
export const DIGESTED_ABOVE_BYTES = 262_144;

/** The keyed digest of one event: the first 8 bytes of an HMAC over the row exactly as stored. */
export function eventDigest(key: string, body: string): Buffer {
  return createHmac('sha256', key).update(body).digest().subarray(0, 8);
}

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * The columns a seal covers: the event's columns ({@link AUDIT_COLUMN_NAMES}), named rather than taken
 * as the whole row, so that a column added to `audit_events` later does not change the digest of every
 * event sealed before it. (A new column that must be covered is a new seal format: add it to the event's
 * columns together with a way to verify older seals; `seal.test.ts` pins this list.)
 */
export const SEALED_COLUMNS = AUDIT_COLUMN_NAMES.filter((c) => !SEALED_WHEN_SET.includes(c));

const JSONB_COLUMNS: readonly AuditColumn[] = [AUDIT_COLUMNS.arguments, AUDIT_COLUMNS.resultSummary];
const TEXT_COLUMNS: readonly AuditColumn[] = [
  AUDIT_COLUMNS.server,
  AUDIT_COLUMNS.tokenId,
  AUDIT_COLUMNS.tokenLabel,
  AUDIT_COLUMNS.clientName,
  AUDIT_COLUMNS.clientVersion,
  AUDIT_COLUMNS.method,
  AUDIT_COLUMNS.tool,
  AUDIT_COLUMNS.outcome,
  AUDIT_COLUMNS.requestId,
  AUDIT_COLUMNS.approvalId,
];

/** The SHA-256 and size of `text`, as jsonb. */
const digestOf = (text: string) =>
  `jsonb_build_object('sha256', encode(sha256(convert_to(${text}, 'UTF8')), 'hex'), 'bytes', octet_length(${text}))`;

/** One column's value in the sealed body of `format`. */
function sealedValue(column: AuditColumn, format: BodyFormat): string {
  if (format === 1) return `e.${column}`;
  if (JSONB_COLUMNS.includes(column))
    return `case when octet_length(e.${column}::text) > ${DIGESTED_ABOVE_BYTES} then ${digestOf(`e.${column}::text`)} else e.${column} end`;
  if (TEXT_COLUMNS.includes(column))
    return `case when octet_length(e.${column}) > ${DIGESTED_ABOVE_BYTES} then ${digestOf(`e.${column}`)} else to_jsonb(e.${column}) end`;
  return `e.${column}`;
}

/**
 * The sealed body: the always-sealed columns, and each of {@link SEALED_WHEN_SET} that holds a value
 * (`jsonb_strip_nulls` of an object of those alone, so a null in an always-sealed column stays).
 */
const sealedBody = (format: BodyFormat) => `(jsonb_build_object(${SEALED_COLUMNS.map(
  (c) => `'${c}', ${sealedValue(c, format)}`,
).join(', ')})
  || jsonb_strip_nulls(jsonb_build_object(${SEALED_WHEN_SET.map((c) => `'${c}', e.${c}`).join(', ')})))::text`;
const SEALED_BODY: Record<BodyFormat, string> = { 1: sealedBody(1), 2: sealedBody(2) };

/**
 * Rows of `audit_events` with sequence numbers in (after, upTo], their sealed columns rendered by
 * PostgreSQL itself as jsonb text in UTC: the digest covers the stored bytes, whatever a client
 * library would make of them.
 */
export async function readBodies(
  tx: TransactionSql,
  after: number,
  upTo: number,
  limit: number,
  format: BodyFormat = BODY_FORMAT,
): Promise<{ seq: number; server: string; at: Date; body: string }[]> {
  await tx`set local time zone 'UTC'`;
  const rows = await tx<{ seq: string; server: string; at: Date; body: string }[]>`
    select seq, server, at, ${tx.unsafe(SEALED_BODY[format])} as body from audit_events e
    where seq > ${after} and seq <= ${upTo} order by seq limit ${limit}`;
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

/** Like {@link readBodies}, for the events numbered within any of `ranges` ([from, to] pairs). */
export async function readBodiesIn(
  tx: TransactionSql,
  ranges: readonly (readonly [number, number])[],
  format: BodyFormat = BODY_FORMAT,
): Promise<{ seq: number; server: string; at: Date; body: string }[]> {
  if (ranges.length === 0) return [];
  await tx`set local time zone 'UTC'`;
  const rows = await tx<{ seq: string; server: string; at: Date; body: string }[]>`
    select seq, server, at, ${tx.unsafe(SEALED_BODY[format])} as body from audit_events e
    join unnest(${ranges.map((r) => String(r[0]))}::text[]::bigint[], ${ranges.map((r) => String(r[1]))}::text[]::bigint[]) as r(f, t)
      on e.seq between r.f and r.t
    order by seq`;
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}
