import type { Sql } from '@bulkhead/db';

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * A point up to which the log can be sealed once the writers in `running` have ended. Every writer
 * takes its transaction id, then a ROW EXCLUSIVE lock on `audit_events_writers` (a table no deployable
 * may lock itself), then its number (`bulkhead_audit_number()`, from the stamping trigger), and this
 * reads the sequence before the locks: so each number up to `lastSeq` belongs to a transaction that had
 * already ended, or that is listed in `running`. Only transactions that hold a number are listed — not
 * every transaction of the cluster, nor one that only locked `audit_events` (0048) — so that a
 * transaction left open by anyone else does not hold sealing up.
 */
export interface Horizon {
  lastSeq: number;
  /** Transaction ids (xid8, as text) of the writers still running. */
  running: string[];
}

export async function horizon(sql: Sql | TransactionSql): Promise<Horizon> {
  const [seq] = await sql<{ last: string; called: boolean }[]>`
    select last_value as last, is_called as called from public.audit_events_seq`;
  // pg_locks names a transaction by its 32-bit id (a writer's oldest id is its top-level one, the others
  // its subtransactions'); the full id is the one within 2^31 of the snapshot's xmax. Not the snapshot's
  // in-progress list: it leaves out a transaction whose id is at or above its xmax (no later one had
  // ended yet), and so once missed a writer that took its number just before.
  const [writers] = await sql<{ running: string[] }[]>`
    with own as (
      select distinct on (t.virtualtransaction) t.transactionid::text::numeric as x
      from pg_catalog.pg_locks r
      join pg_catalog.pg_locks t on t.virtualtransaction = r.virtualtransaction
        and t.locktype = 'transactionid' and t.mode = 'ExclusiveLock' and t.granted
      where r.locktype = 'relation' and r.mode = 'RowExclusiveLock' and r.granted
        and r.relation = 'public.audit_events_writers'::pg_catalog.regclass
        and r.database = (select oid from pg_catalog.pg_database where datname = pg_catalog.current_database())
      order by t.virtualtransaction, pg_catalog.age(t.transactionid) desc),
    head as (select pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::text::numeric as n),
    apart as (select ((own.x - head.n % 4294967296) % 4294967296 + 4294967296) % 4294967296 as d, head.n from own, head)
    select array(
      select (n + case when d < 2147483648 then d else d - 4294967296 end)::text from apart order by 1
    ) as running`;
  return { lastSeq: Number(seq!.last) - (seq!.called ? 0 : 1), running: writers!.running };
}

/**
 * Which of `xids` are still in progress, by the current snapshot (whose reads then see what the others
 * committed): those whose effects it does not see, in its in-progress list or at or above its xmax.
 */
export async function stillRunning(sql: Sql | TransactionSql, xids: readonly string[]): Promise<string[]> {
  if (xids.length === 0) return [];
  const [row] = await sql<{ running: string[] }[]>`
    select array(select x from unnest(${xids as string[]}::text[]) x
      where not pg_catalog.pg_visible_in_snapshot(x::xid8, pg_catalog.pg_current_snapshot())) as running`;
  return row!.running;
}

/** True once every writer of the horizon has ended, apart from those in `late` (already waited for by a seal). */
export async function settled(
  sql: Sql | TransactionSql,
  h: Horizon,
  late: ReadonlySet<string> = new Set(),
): Promise<boolean> {
  const waiting = h.running.filter((x) => !late.has(x));
  return (await stillRunning(sql, waiting)).length === 0;
}
