import { createHash, createHmac } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { writeCheckpoint, type Signing } from './checkpoint.ts';
import { canonicalJson } from './hash.ts';
import { horizon, settled, stillRunning, type Horizon } from './horizon.ts';
import { fenceLease, LEASE_MS, leaseHolder, releaseLease, takeLease } from './lease.ts';
import { BODY_FORMAT, eventDigest, readBodies, readBodiesIn, type BodyFormat } from './sealed-body.ts';

/** The MAC every seal chain starts from. */
export const GENESIS_MAC = '0'.repeat(64);
/** Most events one seal closes; a longer backlog is sealed in several. */
export const MAX_SEAL_EVENTS = 10_000;
/**
 * How long a sealer waits for the transactions that write audit events before it seals around the
 * ones still running: their numbers are left open in the seal and their events sealed once they end.
 */
export const SETTLE_MS = 10_000;
/** An unsealed event older than this is overdue: a verify warning and `bulkhead_audit_unsealed_overdue` on /metrics. */
export const UNSEALED_LIMIT_MS = 10 * 60_000;

/** Per-server event counts. */
export type Counts = Record<string, number>;

/** Where the sealed log ends: the newest seal, the prune checkpoint, or nothing yet. */
export interface SealHead {
  sealNo: number;
  lastSeq: number;
  mac: string;
  totals: Counts;
  sealedAt: Date | null;
  /** Seals whose open ranges are not closed yet. */
  pending: number[];
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
  /**
   * Numbers of the range with no committed event when it was sealed while writers of the log were still
   * running, as [from, to] pairs; null when there were none. Their events, once committed, are sealed
   * by the seal that closes this one (listed among its `seqs`, below its `firstSeq`).
   */
  openRanges: [number, number][] | null;
  /** The transactions (xid8) the open ranges wait for. */
  waitingFor: string[] | null;
  /** The seals whose open ranges are not closed yet, as of this one (itself included). */
  pending: number[] | null;
  /** The highest seal number made before this one; at or above `sealNo`, a seal of this number was deleted. */
  madeBefore: number | null;
  /** How its events' bodies were made ({@link BodyFormat}); null for format 1, every seal made before 0048. */
  bodyFormat: BodyFormat | null;
}

/** The MAC of a seal, chained to the previous one and covering every event digest and count in it. */
export function sealMac(key: string, s: Omit<Seal, 'mac'>): string {
  const events = createHash('sha256').update(s.seqs.join(',')).update('\n').update(s.digests).digest('hex');
  // Seals made before these fields existed have none of them, and keep their MAC.
  const later =
    s.openRanges === null && s.waitingFor === null && s.pending === null && s.madeBefore === null
      ? []
      : [
          canonicalJson({
            // Only when set, so that every seal made before it keeps its MAC.
            ...(s.bodyFormat === null ? {} : { bodyFormat: s.bodyFormat }),
            madeBefore: s.madeBefore,
            openRanges: s.openRanges,
            pending: s.pending,
            waitingFor: s.waitingFor,
          }),
        ];
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
        ...later,
      ].join('\n'),
    )
    .digest('hex');
}

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

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
  openRanges: [number, number][] | null;
  waitingFor: string[] | null;
  pending: string[] | null;
  madeBefore: string | null;
  bodyFormat: BodyFormat | null;
}

export const SEAL_COLUMNS = `seal_no as "sealNo", sealed_at as "sealedAt", first_seq as "firstSeq",
  last_seq as "lastSeq", events, seqs::text[] as seqs, digests, counts, totals, prev_mac as "prevMac", mac,
  open_ranges as "openRanges", waiting_for as "waitingFor", pending::text[] as pending, made_before as "madeBefore",
  body_format as "bodyFormat"`;

export function toSeal(row: SealRow): Seal {
  return {
    ...row,
    sealNo: Number(row.sealNo),
    firstSeq: Number(row.firstSeq),
    lastSeq: Number(row.lastSeq),
    seqs: row.seqs.map(Number),
    pending: row.pending === null ? null : row.pending.map(Number),
    madeBefore: row.madeBefore === null ? null : Number(row.madeBefore),
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
    return {
      sealNo: s.sealNo,
      lastSeq: s.lastSeq,
      mac: s.mac,
      totals: s.totals,
      sealedAt: s.sealedAt,
      pending: s.pending ?? [],
    };
  }
  // `audit prune` cuts only at a seal with nothing pending.
  const cp = await readCheckpoint(sql);
  if (cp)
    return {
      sealNo: cp.sealNo,
      lastSeq: cp.lastSeq,
      mac: cp.mac,
      totals: cp.totals,
      sealedAt: null,
      pending: [],
    };
  return { sealNo: 0, lastSeq: 0, mac: GENESIS_MAC, totals: {}, sealedAt: null, pending: [] };
}

/** The writers that seals still wait for: a new horizon does not wait for them again. */
export async function lateWriters(sql: Sql | TransactionSql): Promise<Set<string>> {
  const { pending } = await sealHead(sql);
  if (pending.length === 0) return new Set();
  const rows = await sql<{ x: string }[]>`
    select distinct unnest(waiting_for) as x from public.audit_seals
    where seal_no = any (${pending.map(String)}::text[]::bigint[])`;
  return new Set(rows.map((r) => r.x));
}

/**
 * Refuses to seal under a login that stored settings for itself (`ALTER ROLE … SET`, applied to the
 * sealer's every new connection): the sentence names them and how to clear them.
 */
async function refuseReconfiguredLogin(tx: TransactionSql): Promise<void> {
  const [row] = await tx<{ changed: string[] }[]>`select public.bulkhead_login_settings_changed() as changed`;
  if (row!.changed.length)
    throw new Error(
      `login role has reconfigured itself (ALTER ROLE … SET ${row!.changed.join(', ')}): the sealer refuses to seal under it until an administrator runs ALTER ROLE … RESET ALL and \`bulkhead db roles --login\` again`,
    );
}

/** The numbers in (after, upTo] that are not in `present` (sorted), as [from, to] pairs. */
function absentRanges(after: number, upTo: number, present: readonly number[]): [number, number][] {
  const ranges: [number, number][] = [];
  let next = after + 1;
  for (const seq of present) {
    if (seq > next) ranges.push([next, seq - 1]);
    next = seq + 1;
  }
  if (next <= upTo) ranges.push([next, upTo]);
  return ranges;
}

/**
 * Seals everything up to `h.lastSeq`: one seal per {@link MAX_SEAL_EVENTS} events, each with the keyed
 * digest of every event in it, its per-server counts, the running totals and a MAC over all of it and
 * the previous seal's MAC. Writers of the horizon still running (by the seal's own snapshot) leave the
 * numbers that have no event yet open in the seal; a seal whose writers have all ended is closed by the
 * next one, which seals the events that arrived in its open ranges. With `heartbeat`, an empty range is
 * sealed too, so that the seal log shows the sealer was alive. With `lease`, each seal is written only
 * while that holder has the sealer lease. Returns the seals written.
 */
export async function sealUpTo(
  sql: Sql,
  key: string,
  h: Horizon,
  options: { heartbeat?: boolean; maxEvents?: number; lease?: string } & Signing = {},
): Promise<Seal[]> {
  const max = options.maxEvents ?? MAX_SEAL_EVENTS;
  const written: Seal[] = [];
  for (;;) {
    // One snapshot for the whole seal: which writers still run, and which events they left, agree.
    const seal = await sql.begin('isolation level repeatable read', async (tx) => {
      if (options.lease) await fenceLease(tx, options.lease);
      await refuseReconfiguredLogin(tx);
      const prev = await sealHead(tx);
      const pendingSeals = prev.pending.length
        ? (
            await tx<Parameters<typeof toSeal>[0][]>`
              select ${tx.unsafe(SEAL_COLUMNS)} from public.audit_seals
              where seal_no = any (${prev.pending.map(String)}::text[]::bigint[]) order by seal_no`
          ).map(toSeal)
        : [];
      const waited = [...new Set(pendingSeals.flatMap((p) => p.waitingFor ?? []))];
      const running = new Set(await stillRunning(tx, [...new Set([...h.running, ...waited])]));
      const closing = pendingSeals.filter((p) => !(p.waitingFor ?? []).some((x) => running.has(x)));
      if (prev.lastSeq >= h.lastSeq && closing.length === 0 && !(options.heartbeat && written.length === 0))
        return null;
      const rows = await readBodies(
        tx,
        prev.lastSeq,
        Math.max(h.lastSeq, prev.lastSeq),
        max + 1,
        BODY_FORMAT,
      );
      const taken = rows.slice(0, max);
      const lastSeq = rows.length > max ? taken[taken.length - 1]!.seq : Math.max(h.lastSeq, prev.lastSeq);
      const late = await readBodiesIn(
        tx,
        closing.flatMap((p) => p.openRanges ?? []),
        BODY_FORMAT,
      );
      const open = h.running.some((x) => running.has(x))
        ? absentRanges(
            prev.lastSeq,
            lastSeq,
            taken.map((r) => r.seq),
          )
        : [];
      const all = [...late, ...taken];
      const counts: Counts = {};
      for (const r of all) counts[r.server] = (counts[r.server] ?? 0) + 1;
      const totals: Counts = { ...prev.totals };
      for (const [server, n] of Object.entries(counts)) totals[server] = (totals[server] ?? 0) + n;
      const sealNo = prev.sealNo + 1;
      const closed = new Set(closing.map((p) => p.sealNo));
      const pending = [...prev.pending.filter((n) => !closed.has(n)), ...(open.length ? [sealNo] : [])];
      const [made] = await tx<{ n: string }[]>`select last_value as n from public.audit_seals_made`;
      const body: Omit<Seal, 'mac'> = {
        sealNo,
        sealedAt: new Date(),
        firstSeq: prev.lastSeq + 1,
        lastSeq,
        events: all.length,
        seqs: all.map((r) => r.seq),
        digests: Buffer.concat(all.map((r) => eventDigest(key, r.body))),
        counts,
        totals,
        prevMac: prev.mac,
        openRanges: open.length ? open : null,
        waitingFor: open.length ? h.running.filter((x) => running.has(x)) : null,
        pending,
        madeBefore: Number(made!.n),
        bodyFormat: BODY_FORMAT,
      };
      const s: Seal = { ...body, mac: sealMac(key, body) };
      await tx`
        insert into public.audit_seals (seal_no, sealed_at, first_seq, last_seq, events, seqs, digests, counts,
          totals, prev_mac, mac, open_ranges, waiting_for, pending, made_before, body_format)
        values (${s.sealNo}, ${s.sealedAt}, ${s.firstSeq}, ${s.lastSeq}, ${s.events}, ${s.seqs.map(String)}::text[]::bigint[],
          ${s.digests}, ${tx.json(s.counts)}, ${tx.json(s.totals)}, ${s.prevMac}, ${s.mac},
          ${s.openRanges ? tx.json(s.openRanges) : null}, ${s.waitingFor}, ${s.pending!.map(String)}::text[]::bigint[],
          ${s.madeBefore}, ${s.bodyFormat})`;
      // In the seal's own transaction: with a signing key, no seal is without its checkpoint.
      if (options.signer) await writeCheckpoint(tx, s, all, options.signer);
      return s;
    });
    if (!seal) return written;
    // After the commit, never before: a seal rolled back must not count as made.
    await sql`
      select pg_catalog.setval('public.audit_seals_made'::pg_catalog.regclass, ${seal.sealNo})
      from public.audit_seals_made where last_value < ${seal.sealNo}`;
    written.push(seal);
    if (seal.lastSeq >= h.lastSeq) return written;
  }
}

/** What one pass of {@link sealLog} did. */
export interface SealPass {
  /** False when another sealer holds the sealer lease (nothing was done). */
  elected: boolean;
  seals: Seal[];
}

/**
 * One-shot sealing (the `audit seal` command and its CronJob): takes the sealer lease or leaves at once,
 * waits (up to `waitMs`, default {@link SETTLE_MS}) for the transactions writing audit events now to
 * end, and seals everything up to this moment; numbers of writers still running are left open in the
 * seal, for a later pass to seal their events. With `signer`, each seal is signed as a checkpoint too.
 */
export async function sealLog(
  sql: Sql,
  key: string,
  options: { waitMs?: number; heartbeat?: boolean } & Signing = {},
): Promise<SealPass> {
  const holder = leaseHolder();
  if (!(await takeLease(sql, holder))) return { elected: false, seals: [] };
  try {
    const h = await horizon(sql);
    const late = await lateWriters(sql);
    const deadline = Date.now() + (options.waitMs ?? SETTLE_MS);
    let renewed = Date.now();
    while (Date.now() < deadline && !(await settled(sql, h, late))) {
      await new Promise((r) => setTimeout(r, 50));
      if (Date.now() - renewed > LEASE_MS / 3) {
        if (!(await takeLease(sql, holder))) return { elected: false, seals: [] };
        renewed = Date.now();
      }
    }
    return {
      elected: true,
      seals: await sealUpTo(sql, key, h, {
        lease: holder,
        ...(options.heartbeat === undefined ? {} : { heartbeat: options.heartbeat }),
        signer: options.signer,
      }),
    };
  } finally {
    await releaseLease(sql, holder).catch(() => {});
  }
}

/** A running sealer. */
export interface Sealer {
  /** Resolves after the next pass that sealed everything appended before this call. */
  sealNow(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The sealer as a loop (`audit seal --follow`, `pnpm start`): one process at a time holds the sealer
 * lease, renewing it as it goes; every `intervalMs` it seals up to the horizon it took one interval
 * earlier (by then its writers have almost always ended; those still running after `settleMs` are
 * sealed around) and takes the next. At least every `heartbeatMs` it writes a seal even when nothing
 * is new. With `signer`, each seal is signed as a checkpoint too.
 */
export function startSealer(
  sql: Sql,
  key: string,
  options: {
    intervalMs?: number;
    heartbeatMs?: number;
    settleMs?: number;
    onError?: (err: unknown) => void;
    onSeal?: (seals: Seal[]) => void;
  } & Signing = {},
): Sealer {
  const interval = options.intervalMs ?? 1000;
  const heartbeatMs = options.heartbeatMs ?? 60_000;
  const settleMs = options.settleMs ?? SETTLE_MS;
  const holder = leaseHolder();
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let leased = false;
  let renewed = 0;
  let pending: (Horizon & { at: number; late: Set<string> }) | undefined;
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
    if (!leased || Date.now() - renewed > LEASE_MS / 3) {
      leased = await takeLease(sql, holder);
      if (!leased) {
        pending = undefined;
        // Another process seals; whoever waits here learns from the log how far it got.
        sealedUpTo = Math.max(sealedUpTo, (await sealHead(sql)).lastSeq);
        release();
        return;
      }
      renewed = Date.now();
    }
    if (pending && (Date.now() - pending.at >= settleMs || (await settled(sql, pending, pending.late)))) {
      const heartbeat = Date.now() - lastSeal >= heartbeatMs;
      const seals = await sealUpTo(sql, key, pending, { heartbeat, lease: holder, signer: options.signer });
      renewed = Date.now();
      if (seals.length) {
        lastSeal = Date.now();
        options.onSeal?.(seals);
      }
      sealedUpTo = Math.max(sealedUpTo, pending.lastSeq);
      pending = undefined;
    }
    if (!pending) pending = { ...(await horizon(sql)), at: Date.now(), late: await lateWriters(sql) };
    release();
  };

  const loop = () => {
    running = tick()
      .catch((err: unknown) => {
        options.onError?.(err);
        // The next tick takes (or renews) the lease again before it seals.
        leased = false;
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
      if (leased) await releaseLease(sql, holder).catch(() => {});
      for (const w of waiters.splice(0)) w.resolve();
    },
  };
}
