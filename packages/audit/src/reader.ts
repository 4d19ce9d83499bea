import type { Sql } from '@bulkhead/db';
import { AUDIT_COLUMNS } from './columns.ts';
import type { AuditEvent, Outcome } from './events.ts';

/** postgres.js's transaction type: the console reads the log only inside one (see `audit_events`' policies). */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/** Filters shared by `audit tail`, `audit export` and the console's audit log. */
export interface AuditFilter {
  server?: string;
  tokenId?: string;
  tool?: string;
  outcome?: Outcome;
  since?: Date;
  until?: Date;
  approvalId?: string;
  traceId?: string;
  /**
   * One person's events: those under any of the person's tokens (`tokenIds`, found by whoever may read
   * the tokens), and the console's events that name the person (`arguments.person`), names compared as
   * separation of duties compares them (`bulkhead_same_person`).
   */
  person?: { name: string; tokenIds: readonly string[] };
  /** Only events after this sequence number (used by `--follow`). */
  afterSeq?: number;
  /** Only events before this sequence number (paging back from the newest). */
  beforeSeq?: number;
}

/** The select list that reads rows as {@link AuditEvent}s: each column under its field's name. */
export const EVENT_COLUMNS = Object.entries(AUDIT_COLUMNS)
  .map(([field, column]) => (field === column ? column : `${column} as "${field}"`))
  .join(', ');

function where(sql: Sql | TransactionSql, filter: AuditFilter) {
  return sql`
    where true
    ${filter.server ? sql`and server = ${filter.server}` : sql``}
    ${filter.tokenId ? sql`and token_id = ${filter.tokenId}` : sql``}
    ${filter.tool ? sql`and tool = ${filter.tool}` : sql``}
    ${filter.outcome ? sql`and outcome = ${filter.outcome}` : sql``}
    ${filter.since ? sql`and at >= ${filter.since}` : sql``}
    ${filter.until ? sql`and at < ${filter.until}` : sql``}
    ${filter.approvalId ? sql`and approval_id = ${filter.approvalId}` : sql``}
    ${filter.traceId ? sql`and trace_id = ${filter.traceId}` : sql``}
    ${
      filter.person
        ? sql`and (token_id = any (${filter.person.tokenIds as string[]}::text[])
            or (server = 'console' and bulkhead_same_person(arguments->>'person', ${filter.person.name})))`
        : sql``
    }
    ${filter.afterSeq !== undefined ? sql`and seq > ${filter.afterSeq}` : sql``}
    ${filter.beforeSeq !== undefined ? sql`and seq < ${filter.beforeSeq}` : sql``}`;
}

function toEvent(row: Record<string, unknown>): AuditEvent {
  return { ...(row as unknown as AuditEvent), seq: Number(row.seq) };
}

/** The newest `limit` events matching `filter`, newest first. */
export async function readNewest(
  sql: Sql | TransactionSql,
  filter: AuditFilter,
  limit: number,
): Promise<AuditEvent[]> {
  const rows =
    await sql`select ${sql.unsafe(EVENT_COLUMNS)} from audit_events ${where(sql, filter)} order by seq desc limit ${limit}`;
  return rows.map(toEvent);
}

/** The newest `limit` events matching `filter`, oldest first. */
export async function readRecent(sql: Sql, filter: AuditFilter, limit = 50): Promise<AuditEvent[]> {
  return (await readNewest(sql, filter, limit)).reverse();
}

/** The first `limit` events matching `filter` (after `filter.afterSeq`), in sequence order: one batch of a stream. */
export async function readBatch(
  sql: Sql | TransactionSql,
  filter: AuditFilter,
  limit: number,
): Promise<AuditEvent[]> {
  const rows = await sql`
    select ${sql.unsafe(EVENT_COLUMNS)} from audit_events ${where(sql, filter)} order by seq limit ${limit}`;
  return rows.map(toEvent);
}

/** Streams every event matching `filter` in sequence order, a batch at a time, never holding the whole log. */
export async function* streamEvents(
  sql: Sql,
  filter: AuditFilter,
  batchSize = 1000,
): AsyncGenerator<AuditEvent> {
  let after = filter.afterSeq ?? 0;
  for (;;) {
    const batch = await readBatch(sql, { ...filter, afterSeq: after }, batchSize);
    yield* batch;
    if (batch.length < batchSize) return;
    after = batch[batch.length - 1]!.seq;
  }
}

/** The event numbered `seq`, if there is one (and the reader may see it). */
export async function readEvent(sql: Sql | TransactionSql, seq: number): Promise<AuditEvent | undefined> {
  const [row] = await sql`select ${sql.unsafe(EVENT_COLUMNS)} from audit_events where seq = ${seq}`;
  return row ? toEvent(row) : undefined;
}
