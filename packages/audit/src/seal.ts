import { createHash, createHmac } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { canonicalJson } from './hash.ts';

/** The MAC every seal chain starts from. */
export const GENESIS_MAC = '0'.repeat(64);
/** Most events one seal closes; a longer backlog is sealed in several. */
export const MAX_SEAL_EVENTS = 10_000;
/** One sealer at a time, elected by a session advisory lock that no request ever takes. */
const SEALER_LOCK = 0x6275_6c6c;

/** Per-server event counts. */
export type Counts = Record<string, number>;

/** Where the sealed log ends: the newest seal, the prune checkpoint, or nothing yet. */
export interface SealHead {
  sealNo: number;
  lastSeq: number;
  mac: string;
  totals: Counts;
  sealedAt: Date | null;
}

/** One stored seal. */
export interface Seal {
  sealNo: number;
  sealedAt: Date;
  firstSeq: number;
  lastSeq: number;
  events: number;
  seqs: number[];
  digests: Buffer;
  counts: Counts;
  totals: Counts;
  prevMac: string;
  mac: string;
}

/** The keyed digest of one event: the first 8 bytes of an HMAC over the row exactly as stored. */
export function eventDigest(key: string, body: string): Buffer {
  return createHmac('sha256', key).update(body).digest().subarray(0, 8);
}

/** The MAC of a seal, chained to the previous one and covering every event digest and count in it. */
export function sealMac(key: string, s: Omit<Seal, 'mac'>): string {
  const events = createHash('sha256').update(s.seqs.join(',')).update('\n').update(s.digests).digest('hex');
  return createHmac('sha256', key)
    .update(
      [
        s.prevMac,
        s.sealNo,
        s.firstSeq,
        s.lastSeq,
        s.events,
        s.sealedAt.toISOString(),
        canonicalJson(s.counts),
        canonicalJson(s.totals),
        events,
      ].join('\n'),
    )
    .digest('hex');
}

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * The columns a seal covers, named rather than taken as the whole row: a column added to
 * `audit_events` later must not change the digest of every event sealed before it. (A new column
 * that must be covered is a new seal format: add it here together with a way to verify older seals.)
 */
export const SEALED_COLUMNS = [
  'seq',
  'id',
  'at',
  'server',
  'db_role',
  'token_id',
  'token_label',
  'client_name',
  'client_version',
  'method',
  'tool',
  'arguments',
  'outcome',
  'result_summary',
  'duration_ms',
  'request_id',
  'approval_id',
  'injection_suspected',
] as const;

const SEALED_BODY = `jsonb_build_object(${SEALED_COLUMNS.map((c) => `'${c}', e.${c}`).join(', ')})::text`;

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
): Promise<{ seq: number; server: string; at: Date; body: string }[]> {
  await tx`set local time zone 'UTC'`;
  const rows = await tx<{ seq: string; server: string; at: Date; body: string }[]>`
    select seq, server, at, ${tx.unsafe(SEALED_BODY)} as body from audit_events e
    where seq > ${after} and seq <= ${upTo} order by seq limit ${limit}`;
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}

interface SealRow {
  sealNo: string;
  sealedAt: Date;
  firstSeq: string;
  lastSeq: string;
  events: number;
  seqs: string[];
  digests: Buffer;
  counts: Counts;
  totals: Counts;
  prevMac: string;
  mac: string;
}

export const SEAL_COLUMNS = `seal_no as "sealNo", sealed_at as "sealedAt", first_seq as "firstSeq",
  last_seq as "lastSeq", events, seqs::text[] as seqs, digests, counts, totals, prev_mac as "prevMac", mac`;

export function toSeal(r: SealRow): Seal {
  return {
    ...r,
    sealNo: Number(r.sealNo),
    firstSeq: Number(r.firstSeq),
    lastSeq: Number(r.lastSeq),
    seqs: r.seqs.map(Number),
  };
}

/** The prune checkpoint, as stored. */
export interface PruneCheckpoint {
  sealNo: number;
  lastSeq: number;
  mac: string;
  totals: Counts;
  prunedBefore: Date;
  removed: number;
  signature: string;
}

export async function readCheckpoint(sql: Sql | TransactionSql): Promise<PruneCheckpoint | undefined> {
  const [row] = await sql<
    (Omit<PruneCheckpoint, 'sealNo' | 'lastSeq' | 'removed'> & Record<string, string>)[]
  >`
    select seal_no as "sealNo", last_seq as "lastSeq", mac, totals, pruned_before as "prunedBefore",
      removed, signature from audit_prune_checkpoint`;
  if (!row) return undefined;
  return {
    ...row,
    sealNo: Number(row.sealNo),
    lastSeq: Number(row.lastSeq),
    removed: Number(row.removed),
  } as PruneCheckpoint;
}

/** Signs a prune checkpoint so that a forged one (to hide removed events) is caught. */
export function signCheckpoint(
  key: string,
  c: Pick<PruneCheckpoint, 'sealNo' | 'lastSeq' | 'mac' | 'totals'>,
) {
  return createHmac('sha256', key)
    .update(`checkpoint\n${c.sealNo}\n${c.lastSeq}\n${c.mac}\n${canonicalJson(c.totals)}`)
    .digest('hex');
}

/** Where the sealed log ends now. */
export async function sealHead(sql: Sql | TransactionSql): Promise<SealHead> {
  const [last] = await sql<SealRow[]>`
    select ${sql.unsafe(SEAL_COLUMNS)} from audit_seals order by seal_no desc limit 1`;
  if (last) {
    const s = toSeal(last);
    return { sealNo: s.sealNo, lastSeq: s.lastSeq, mac: s.mac, totals: s.totals, sealedAt: s.sealedAt };
  }
  const cp = await readCheckpoint(sql);
  if (cp) return { sealNo: cp.sealNo, lastSeq: cp.lastSeq, mac: cp.mac, totals: cp.totals, sealedAt: null };
  return { sealNo: 0, lastSeq: 0, mac: GENESIS_MAC, totals: {}, sealedAt: null };
}

/**
 * A point up to which the log can be sealed once every transaction in `running` has finished. Every
 * writer takes its transaction id before its sequence number (the stamping trigger), and this reads
 * the sequence before the snapshot: so each number up to `lastSeq` belongs to a transaction that had
 * already finished, or that is listed in `running`.
 */
export interface Horizon {
  lastSeq: number;
  running: string[];
}

export async function horizon(sql: Sql): Promise<Horizon> {
  const [seq] = await sql<{ last: string; called: boolean }[]>`
    select last_value as last, is_called as called from audit_events_seq`;
  const [snap] = await sql<{ running: string[] }[]>`
    select array(select x::text from pg_snapshot_xip(pg_current_snapshot()) x) as running`;
  return { lastSeq: Number(seq!.last) - (seq!.called ? 0 : 1), running: snap!.running };
}

/** True once no transaction of the horizon is still running. */
export async function settled(sql: Sql, h: Horizon): Promise<boolean> {
  if (h.running.length === 0) return true;
  const [row] = await sql<{ done: boolean }[]>`
    select coalesce(bool_and(coalesce(pg_xact_status(x::xid8), 'committed') <> 'in progress'), true) as done
    from unnest(${h.running}::text[]) x`;
  return row!.done;
}

/**
 * Seals everything up to `h.lastSeq` (which must be settled): one seal per {@link MAX_SEAL_EVENTS}
 * events, each with the keyed digest of every event in its range, its per-server counts, the running
 * totals and a MAC over all of it and the previous seal's MAC. With `heartbeat`, an empty range is
 * sealed too, so that the seal log shows the sealer was alive. Returns the seals written.
 */
export async function sealUpTo(
  sql: Sql,
  key: string,
  h: Pick<Horizon, 'lastSeq'>,
  options: { heartbeat?: boolean; maxEvents?: number } = {},
): Promise<Seal[]> {
  const max = options.maxEvents ?? MAX_SEAL_EVENTS;
  const written: Seal[] = [];
  for (;;) {
    const seal = await sql.begin(async (tx) => {
      const prev = await sealHead(tx);
      if (prev.lastSeq >= h.lastSeq && !(options.heartbeat && written.length === 0)) return null;
      const rows = await readBodies(tx, prev.lastSeq, Math.max(h.lastSeq, prev.lastSeq), max + 1);
      const taken = rows.slice(0, max);
      const lastSeq = rows.length > max ? taken[taken.length - 1]!.seq : Math.max(h.lastSeq, prev.lastSeq);
      const counts: Counts = {};
      for (const r of taken) counts[r.server] = (counts[r.server] ?? 0) + 1;
      const totals: Counts = { ...prev.totals };
      for (const [server, n] of Object.entries(counts)) totals[server] = (totals[server] ?? 0) + n;
      const body: Omit<Seal, 'mac'> = {
        sealNo: prev.sealNo + 1,
        sealedAt: new Date(),
        firstSeq: prev.lastSeq + 1,
        lastSeq,
        events: taken.length,
        seqs: taken.map((r) => r.seq),
        digests: Buffer.concat(taken.map((r) => eventDigest(key, r.body))),
        counts,
        totals,
        prevMac: prev.mac,
      };
      const s: Seal = { ...body, mac: sealMac(key, body) };
      await tx`
        insert into audit_seals (seal_no, sealed_at, first_seq, last_seq, events, seqs, digests, counts, totals, prev_mac, mac)
        values (${s.sealNo}, ${s.sealedAt}, ${s.firstSeq}, ${s.lastSeq}, ${s.events}, ${s.seqs.map(String)}::text[]::bigint[],
          ${s.digests}, ${tx.json(s.counts)}, ${tx.json(s.totals)}, ${s.prevMac}, ${s.mac})`;
      return s;
    });
    if (!seal) return written;
    written.push(seal);
    if (seal.lastSeq >= h.lastSeq) return written;
  }
}

/** What one pass of {@link sealLog} did. */
export interface SealPass {
  /** False when another sealer holds the election lock (nothing was done). */
  elected: boolean;
  seals: Seal[];
}

/**
 * One-shot sealing (the `audit seal` command and its CronJob): wins the sealer election or leaves at
 * once, waits (up to `waitMs`) for the transactions running now to finish, and seals everything up to
 * this moment.
 */
export async function sealLog(
  sql: Sql,
  key: string,
  options: { waitMs?: number; heartbeat?: boolean } = {},
): Promise<SealPass> {
  const conn = await sql.reserve();
  try {
    const [lock] = await conn<{ ok: boolean }[]>`select pg_try_advisory_lock(${SEALER_LOCK}) as ok`;
    if (!lock!.ok) return { elected: false, seals: [] };
    try {
      const h = await horizon(conn as unknown as Sql);
      const deadline = Date.now() + (options.waitMs ?? 30_000);
      while (!(await settled(conn as unknown as Sql, h))) {
        if (Date.now() > deadline)
          throw new Error('transactions that write audit events are still running; sealing waits for them');
        await new Promise((r) => setTimeout(r, 50));
      }
      return {
        elected: true,
        seals: await sealUpTo(
          sql,
          key,
          h,
          options.heartbeat === undefined ? {} : { heartbeat: options.heartbeat },
        ),
      };
    } finally {
      await conn`select pg_advisory_unlock(${SEALER_LOCK})`;
    }
  } finally {
    conn.release();
  }
}

/** A running sealer. */
export interface Sealer {
  /** Resolves after the next pass that sealed everything appended before this call. */
  sealNow(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The sealer as a loop (`audit seal --follow`, `pnpm start`): one process at a time holds the election
 * lock on a connection of its own; every `intervalMs` it seals up to the horizon it took one interval
 * earlier (by then its transactions have almost always finished) and takes the next. At least every
 * `heartbeatMs` it writes a seal even when nothing is new.
 */
export function startSealer(
  sql: Sql,
  key: string,
  options: {
    intervalMs?: number;
    heartbeatMs?: number;
    onError?: (err: unknown) => void;
    onSeal?: (seals: Seal[]) => void;
  } = {},
): Sealer {
  const interval = options.intervalMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 60_000;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let conn: Awaited<ReturnType<Sql['reserve']>> | undefined;
  let pending: Horizon | undefined;
  let lastSeal = 0;
  let waiters: { seq: number; resolve: () => void }[] = [];
  let sealedUpTo = 0;
  let running: Promise<void> = Promise.resolve();

  const release = () => {
    const ready = waiters.filter((w) => w.seq <= sealedUpTo);
    waiters = waiters.filter((w) => w.seq > sealedUpTo);
    for (const w of ready) w.resolve();
  };

  const tick = async () => {
    if (stopped) return;
    if (!conn) {
      const c = await sql.reserve();
      const [lock] = await c<{ ok: boolean }[]>`select pg_try_advisory_lock(${SEALER_LOCK}) as ok`;
      if (!lock!.ok) {
        c.release();
        // Another process seals; whoever waits here learns from the log how far it got.
        sealedUpTo = Math.max(sealedUpTo, (await sealHead(sql)).lastSeq);
        release();
        return;
      }
      conn = c;
    }
    const db = conn as unknown as Sql;
    if (pending && (await settled(db, pending))) {
      const heartbeat = Date.now() - lastSeal >= heartbeatMs;
      const seals = await sealUpTo(sql, key, pending, { heartbeat });
      if (seals.length) {
        lastSeal = Date.now();
        options.onSeal?.(seals);
      }
      sealedUpTo = Math.max(sealedUpTo, pending.lastSeq);
      pending = undefined;
    }
    if (!pending) pending = await horizon(db);
    release();
  };

  const loop = () => {
    running = tick()
      .catch((err: unknown) => {
        options.onError?.(err);
        // A broken connection loses the lock with it; the next tick competes again.
        conn?.release();
        conn = undefined;
        pending = undefined;
      })
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, waiters.length ? Math.min(interval, 50) : interval);
      });
  };
  loop();

  return {
    async sealNow() {
      const h = await horizon(sql);
      if (h.lastSeq <= sealedUpTo || stopped) return;
      // The loop turns every 50 ms while someone waits: the next horizon covers these events.
      await new Promise<void>((resolve) => waiters.push({ seq: h.lastSeq, resolve }));
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      if (conn) {
        await conn`select pg_advisory_unlock(${SEALER_LOCK})`.catch(() => {});
        conn.release();
      }
      for (const w of waiters.splice(0)) w.resolve();
    },
  };
}
