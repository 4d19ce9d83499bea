import type { Sql } from '@bulkhead/db';
import type { AuditEvent } from '../events.ts';
import { EVENT_COLUMNS } from '../reader.ts';

/**
 * How far a destination has acknowledged the sealed log: every event of the seals below `sealNo`, and
 * the first `sent` events that seal `sealNo` lists. Events go out in the order they were sealed: seal by
 * seal, and in each seal in the order it lists them (by number).
 */
export interface ForwardPosition {
  sealNo: number;
  sent: number;
}

/**
 * How long a forwarder's hold on a destination lasts unless renewed: one forwarder moves a destination
 * at a time, and one that dies is replaced this much later at most.
 */
export const FORWARD_LEASE_MS = 30_000;

/** The next sealed events after a position, and the position once they are acknowledged. */
export interface SealedBatch {
  events: AuditEvent[];
  next: ForwardPosition;
  /** Numbers a seal lists whose event is gone (removed behind the log's back; `audit verify` names it). */
  missing: number[];
  /** Whether more sealed events follow the batch. */
  more: boolean;
}

/**
 * Takes (or renews) the hold on `destination` for `holder`, and returns its position; undefined when
 * another forwarder holds it. A destination seen for the first time starts at the oldest seal in the
 * log: nothing sealed is left out.
 */
export async function holdDestination(
  sql: Sql,
  destination: string,
  holder: string,
  ms = FORWARD_LEASE_MS,
): Promise<ForwardPosition | undefined> {
  await sql`
    insert into public.audit_forward_positions (destination) values (${destination})
    on conflict (destination) do nothing`;
  const [row] = await sql<{ sealNo: string; sent: number }[]>`
    update public.audit_forward_positions p
    set holder = ${holder}, expires_at = now() + make_interval(secs => ${ms / 1000})
    where p.destination in (select destination from public.audit_forward_positions
      where destination = ${destination} and (expires_at < now() or holder = ${holder}) for update skip locked)
    returning seal_no as "sealNo", sent`;
  return row ? { sealNo: Number(row.sealNo), sent: row.sent } : undefined;
}

/**
 * Moves `destination` to `next` after it acknowledged `count` events, and renews the hold; fails when
 * `holder` lost the hold meanwhile (another forwarder took over, and may send the batch again).
 */
export async function advanceDestination(
  sql: Sql,
  destination: string,
  holder: string,
  next: ForwardPosition,
  count: number,
  ms = FORWARD_LEASE_MS,
): Promise<void> {
  const rows = await sql`
    update public.audit_forward_positions
    set seal_no = ${next.sealNo}, sent = ${next.sent}, forwarded = forwarded + ${count}, updated_at = now(),
      expires_at = now() + make_interval(secs => ${ms / 1000})
    where destination = ${destination} and holder = ${holder}
    returning 1`;
  if (rows.length !== 1)
    throw new Error(
      `another forwarder took ${destination} over; the ${count} events just sent may arrive there twice`,
    );
}

/** Gives the hold on `destination` up, so that the next forwarder need not wait for it to expire. */
export async function releaseDestination(sql: Sql, destination: string, holder: string): Promise<void> {
  await sql`
    update public.audit_forward_positions set holder = null, expires_at = '-infinity'
    where destination = ${destination} and holder = ${holder}`;
}

/** Seals read at once when looking for the next batch. */
const SEALS_AT_ONCE = 200;

/** Up to `limit` sealed events after `from`, in the order they were sealed. */
export async function readSealedBatch(sql: Sql, from: ForwardPosition, limit: number): Promise<SealedBatch> {
  const seals = await sql<{ sealNo: string; seqs: string[] }[]>`
    select seal_no as "sealNo", seqs::text[] as seqs from public.audit_seals
    where seal_no >= ${from.sealNo} order by seal_no limit ${SEALS_AT_ONCE}`;
  const seqs: number[] = [];
  let next = from;
  let more = false;
  for (const seal of seals) {
    const sealNo = Number(seal.sealNo);
    const skip = sealNo === from.sealNo ? from.sent : 0;
    const listed = seal.seqs.slice(skip).map(Number);
    if (seqs.length + listed.length > limit) {
      const take = limit - seqs.length;
      seqs.push(...listed.slice(0, take));
      next = { sealNo, sent: skip + take };
      more = true;
      break;
    }
    seqs.push(...listed);
    next = { sealNo, sent: skip + listed.length };
  }
  if (seals.length === SEALS_AT_ONCE) more = true;
  const rows = seqs.length
    ? await sql<Record<string, unknown>[]>`
        select ${sql.unsafe(EVENT_COLUMNS)} from public.audit_events
        where seq = any (${seqs.map(String)}::text[]::bigint[])`
    : [];
  const bySeq = new Map(
    rows.map((r) => [Number(r.seq), { ...(r as unknown as AuditEvent), seq: Number(r.seq) }]),
  );
  return {
    events: seqs.flatMap((seq) => bySeq.get(seq) ?? []),
    missing: seqs.filter((seq) => !bySeq.has(seq)),
    next,
    more,
  };
}

/** Events sealed but not yet acknowledged, per destination, and when the oldest of them was sealed. */
export interface ForwardLag {
  destination: string;
  lag: number;
  oldestAt: Date | null;
}

/** The lag of every destination a forwarder has ever moved (`bulkhead_audit_forward_lag()`). */
export async function readForwardLag(sql: Sql): Promise<ForwardLag[]> {
  const rows = await sql<{ destination: string; lag: string; oldestAt: Date | null }[]>`
    select destination, lag, oldest_at as "oldestAt" from public.bulkhead_audit_forward_lag()`;
  return rows.map((r) => ({ ...r, lag: Number(r.lag) }));
}
