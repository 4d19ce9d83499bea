import type { Sql } from '@bulkhead/db';
import { AUDIT_COLUMNS } from './columns.ts';
import type { AuditEvent, Outcome } from './events.ts';

/** Filters shared by `audit tail` and `audit export`. */
export interface AuditFilter {
  server?: string;
  tokenId?: string;
  tool?: string;
  outcome?: Outcome;
  since?: Date;
  until?: Date;
  /** Only events after this sequence number (used by `--follow`). */
  afterSeq?: number;
}

/** The select list that reads rows as {@link AuditEvent}s: each column under its field's name. */
export const EVENT_COLUMNS = Object.entries(AUDIT_COLUMNS)
  .map(([field, column]) => (field === column ? column : `${column} as "${field}"`))
  .join(', ');

function where(sql: Sql, f: AuditFilter) {
  return sql`
    where true
    ${f.server ? sql`and server = ${f.server}` : sql``}
    ${f.tokenId ? sql`and token_id = ${f.tokenId}` : sql``}
    ${f.tool ? sql`and tool = ${f.tool}` : sql``}
    ${f.outcome ? sql`and outcome = ${f.outcome}` : sql``}
    ${f.since ? sql`and at >= ${f.since}` : sql``}
    ${f.until ? sql`and at < ${f.until}` : sql``}
    ${f.afterSeq !== undefined ? sql`and seq > ${f.afterSeq}` : sql``}`;
}

function toEvent(row: Record<string, unknown>): AuditEvent {
  return { ...(row as unknown as AuditEvent), seq: Number(row.seq) };
}

/** The newest `limit` events matching `filter`, oldest first. */
export async function readRecent(sql: Sql, filter: AuditFilter, limit = 50): Promise<AuditEvent[]> {
  const rows =
    await sql`select ${sql.unsafe(EVENT_COLUMNS)} from audit_events ${where(sql, filter)} order by seq desc limit ${limit}`;
  return rows.map(toEvent).reverse();
}

/** Streams every event matching `filter` in sequence order, a batch at a time, never holding the whole log. */
export async function* streamEvents(
  sql: Sql,
  filter: AuditFilter,
  batchSize = 1000,
): AsyncGenerator<AuditEvent> {
  let after = filter.afterSeq ?? 0;
  for (;;) {
    const rows = await sql`
      select ${sql.unsafe(EVENT_COLUMNS)} from audit_events ${where(sql, { ...filter, afterSeq: after })}
      order by seq limit ${batchSize}`;
    for (const row of rows) yield toEvent(row);
    if (rows.length < batchSize) return;
    after = Number(rows[rows.length - 1]!.seq);
  }
}
