import { timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import {
  eventDigest,
  GENESIS_MAC,
  readBodies,
  readBodiesIn,
  readCheckpoint,
  SEAL_COLUMNS,
  sealMac,
  signCheckpoint,
  toSeal,
  UNSEALED_LIMIT_MS,
  type Counts,
  type Seal,
} from './seal.ts';

/** One thing that does not hold. Every break is reported, not only the first. */
export interface LogBreak {
  kind:
    | 'seal_missing'
    | 'seal_changed'
    | 'event_changed'
    | 'event_missing'
    | 'event_unsealed'
    | 'event_in_pruned_range'
    | 'server_mismatch'
    | 'checkpoint_invalid'
    | 'anchor_mismatch'
    | 'seal_remade'
    | 'approval_undecided';
  /** The seal the break was found in, when there is one. */
  sealNo: number | null;
  /** The event's sequence number, when the break is about one event. */
  seq: number | null;
  server: string | null;
  reason: string;
}

/** Something to look at that is no break: sealing lags, or a seal waits long for a writer. */
export interface LogWarning {
  kind: 'unsealed_overdue' | 'open_overdue';
  sealNo: number | null;
  reason: string;
}

/** Per server: how many events the seals account for, and how many of those are still there. */
export interface ServerTally {
  server: string;
  sealed: number;
  present: number;
}

/** The verdict on the whole log. */
export interface LogReport {
  ok: boolean;
  seals: number;
  /** Sequence numbers covered by seals (and the prune checkpoint before them). */
  sealedThrough: number;
  /** The newest seal's time: a sealer that stopped, or a tail of seals deleted, shows here. */
  newestSealAt: Date | null;
  checkpoint: { sealNo: number; lastSeq: number; prunedBefore: Date } | null;
  servers: ServerTally[];
  breaks: LogBreak[];
  /** Breaks beyond the first `maxBreaks` are only counted. */
  moreBreaks: number;
  /**
   * Events not yet covered by any seal: after the newest seal, or committed in a range a seal left open
   * for a writer that was still running (sealed when that seal is closed).
   */
  unsealed: { count: number; oldestAt: Date | null };
  warnings: LogWarning[];
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Checks the whole log with the seal key: every seal's MAC and its link to the one before, every sealed
 * event's digest (a changed row, a reordered one — the sequence number is part of what is digested —
 * and a missing one are each named by sequence number), every event present inside a sealed range that
 * no seal covers (inserted afterwards), events left in a pruned range, the per-server totals of the
 * newest seal against the events present (a server whose whole history was deleted shows with 0
 * present), the prune checkpoint's signature, and an optional anchor kept outside the database (the
 * seal number and MAC a previous verify saw: a deleted tail of seals fails it). Events after the
 * newest seal are reported as the unsealed tail, with their count and age.
 * Also: a seal made again over a range whose first seal was deleted (`seal_remade`), seals made and
 * gone from the end (`seal_missing`, from the count of seals made), events that arrived in a range a
 * seal left open for a running writer and were not sealed when it was closed, and approvals that ran
 * without their `approved` decision event (`approval_undecided`). An unsealed event older than
 * `unsealedLimitMs`, and a seal waiting that long for a writer, are warnings.
 */
export async function verifyLog(
  sql: Sql,
  options: {
    key: string;
    anchor?: { sealNo: number; mac: string } | undefined;
    maxBreaks?: number;
    /** An unsealed event older than this is a warning (default {@link UNSEALED_LIMIT_MS}). */
    unsealedLimitMs?: number;
    onProgress?: (seals: number, events: number) => void;
  },
): Promise<LogReport> {
  const { key } = options;
  const maxBreaks = options.maxBreaks ?? 1000;
  const breaks: LogBreak[] = [];
  let moreBreaks = 0;
  const fail = (b: LogBreak) => {
    if (breaks.length < maxBreaks) breaks.push(b);
    else moreBreaks++;
  };

  const checkpoint = await readCheckpoint(sql);
  let prevMac = GENESIS_MAC;
  let prevNo = 0;
  let prevLast = 0;
  let totals: Counts = {};
  if (checkpoint) {
    if (!same(checkpoint.signature, signCheckpoint(key, checkpoint)))
      fail({
        kind: 'checkpoint_invalid',
        sealNo: checkpoint.sealNo,
        seq: null,
        server: null,
        reason: 'the prune checkpoint is not signed with this key (forged, or another key)',
      });
    prevMac = checkpoint.mac;
    prevNo = checkpoint.sealNo;
    prevLast = checkpoint.lastSeq;
    totals = { ...checkpoint.totals };
  }
  const [stale] = await sql<{ n: number; first: string | null }[]>`
    select count(*)::int as n, min(seq) as first from audit_events where seq <= ${prevLast}`;
  if (stale!.n > 0)
    fail({
      kind: 'event_in_pruned_range',
      sealNo: checkpoint?.sealNo ?? null,
      seq: Number(stale!.first),
      server: null,
      reason: `${stale!.n} event(s) numbered at or below ${prevLast}, ${checkpoint ? 'in the pruned range' : 'before the first number'}: inserted afterwards`,
    });
  const baseTotals = { ...totals };
  const present: Counts = {};
  let seals = 0;
  let events = 0;
  let newestSealAt: Date | null = null;
  let anchorSeen = false;
  // Seals left open for running writers, and the events that arrived in their open ranges since.
  let pending: number[] = [];
  const open = new Map<number, { ranges: [number, number][]; sealedAt: Date }>();
  const arrived = new Map<number, { sealNo: number; server: string; at: Date }>();

  for (let after = prevNo; ;) {
    const rows = await sql<Parameters<typeof toSeal>[0][]>`
      select ${sql.unsafe(SEAL_COLUMNS)} from audit_seals where seal_no > ${after} order by seal_no limit 200`;
    if (rows.length === 0) break;
    for (const row of rows) {
      const seal: Seal = toSeal(row);
      after = seal.sealNo;
      seals++;
      newestSealAt = seal.sealedAt;
      if (seal.sealNo !== prevNo + 1)
        fail({
          kind: 'seal_missing',
          sealNo: prevNo + 1,
          seq: null,
          server: null,
          reason: `seal${seal.sealNo - prevNo > 2 ? 's' : ''} ${prevNo + 1}${seal.sealNo - prevNo > 2 ? `–${seal.sealNo - 1}` : ''} missing`,
        });
      const { mac, ...body } = seal;
      if (!same(mac, sealMac(key, body)) || seal.prevMac !== prevMac || seal.firstSeq !== prevLast + 1)
        fail({
          kind: 'seal_changed',
          sealNo: seal.sealNo,
          seq: null,
          server: null,
          reason:
            seal.prevMac !== prevMac || seal.firstSeq !== prevLast + 1
              ? 'the seal does not continue the one before it'
              : 'the seal record does not match its MAC (changed, or sealed with another key)',
        });
      if (options.anchor && seal.sealNo === options.anchor.sealNo) {
        anchorSeen = true;
        if (!same(seal.mac, options.anchor.mac))
          fail({
            kind: 'anchor_mismatch',
            sealNo: seal.sealNo,
            seq: null,
            server: null,
            reason: 'this seal differs from the one recorded in the anchor',
          });
      }
      if (seal.madeBefore !== null && seal.madeBefore >= seal.sealNo)
        fail({
          kind: 'seal_remade',
          sealNo: seal.sealNo,
          seq: null,
          server: null,
          reason: `seal ${seal.sealNo} was made again: seals up to ${seal.madeBefore} had been made before it, so the first seal ${seal.sealNo}${seal.madeBefore > seal.sealNo ? ` (and those after it)` : ''} was deleted, and the events it sealed may have been deleted with it`,
        });
      for (const [server, n] of Object.entries(seal.counts)) totals[server] = (totals[server] ?? 0) + n;
      const expected = new Map<number, Buffer>();
      seal.seqs.forEach((seq, i) => expected.set(seq, seal.digests.subarray(i * 8, i * 8 + 8)));
      const own = seal.openRanges ?? [];
      const closed = pending.filter((n) => !(seal.pending ?? []).includes(n));
      const late = seal.seqs.filter((seq) => seq < seal.firstSeq);
      const bodies = await sql.begin(async (tx) => [
        ...(late.length
          ? await readBodiesIn(
              tx,
              late.map((seq) => [seq, seq] as const),
            )
          : []),
        ...(await readBodies(tx, seal.firstSeq - 1, seal.lastSeq, seal.events + 100_000)),
      ]);
      for (const e of bodies) {
        const digest = expected.get(e.seq);
        if (!digest && own.some(([from, to]) => e.seq >= from && e.seq <= to)) {
          // Committed after this seal was made, by a writer it waited for: the seal that closes it seals it.
          arrived.set(e.seq, { sealNo: seal.sealNo, server: e.server, at: e.at });
          continue;
        }
        events++;
        arrived.delete(e.seq);
        if (!digest) {
          fail({
            kind: 'event_unsealed',
            sealNo: seal.sealNo,
            seq: e.seq,
            server: e.server,
            reason: `event ${e.seq} (${e.server}, ${e.at.toISOString()}) lies inside seal ${seal.sealNo} but was not sealed: inserted afterwards`,
          });
          continue;
        }
        expected.delete(e.seq);
        present[e.server] = (present[e.server] ?? 0) + 1;
        if (!eventDigest(key, e.body).equals(digest))
          fail({
            kind: 'event_changed',
            sealNo: seal.sealNo,
            seq: e.seq,
            server: e.server,
            reason: `event ${e.seq} (${e.server}, ${e.at.toISOString()}) differs from what was sealed: changed or renumbered`,
          });
      }
      for (const seq of expected.keys())
        fail({
          kind: 'event_missing',
          sealNo: seal.sealNo,
          seq,
          server: null,
          reason: `event ${seq}, sealed in seal ${seal.sealNo}, is missing`,
        });
      for (const [seq, e] of arrived)
        if (closed.includes(e.sealNo)) {
          arrived.delete(seq);
          fail({
            kind: 'event_unsealed',
            sealNo: e.sealNo,
            seq,
            server: e.server,
            reason: `event ${seq} (${e.server}, ${e.at.toISOString()}) lies in a range seal ${e.sealNo} left open, but was not sealed when seal ${seal.sealNo} closed it: inserted afterwards`,
          });
        }
      for (const n of closed) open.delete(n);
      if (own.length) open.set(seal.sealNo, { ranges: own, sealedAt: seal.sealedAt });
      pending = seal.pending ?? [];
      prevMac = seal.mac;
      prevNo = seal.sealNo;
      prevLast = seal.lastSeq;
      options.onProgress?.(seals, events);
    }
  }

  const [made] = await sql<{ n: string }[]>`select last_value as n from public.audit_seals_made`;
  if (Number(made!.n) > prevNo)
    fail({
      kind: 'seal_missing',
      sealNo: prevNo + 1,
      seq: null,
      server: null,
      reason: `seals up to ${made!.n} were made, but the log ends at seal ${prevNo}: seals were deleted from the end`,
    });
  for (const a of await sql<{ id: string; server: string; status: string; decidedBy: string | null }[]>`
    select approval_id as id, server, status, decided_by as "decidedBy" from bulkhead_audit_undecided_approvals()`)
    fail({
      kind: 'approval_undecided',
      sealNo: null,
      seq: null,
      server: a.server,
      reason: `approval ${a.id} (${a.server}) is ${a.status}${a.decidedBy ? `, decided by ${a.decidedBy},` : ''} but its approved decision event is missing from the log`,
    });

  if (options.anchor && !anchorSeen && options.anchor.sealNo > prevNo)
    fail({
      kind: 'anchor_mismatch',
      sealNo: options.anchor.sealNo,
      seq: null,
      server: null,
      reason: `the anchor records seal ${options.anchor.sealNo}, but the log ends at seal ${prevNo}: seals were deleted from the end`,
    });

  const servers: ServerTally[] = [];
  for (const server of [...new Set([...Object.keys(totals), ...Object.keys(present)])].sort()) {
    const tally = {
      server,
      sealed: (totals[server] ?? 0) - (baseTotals[server] ?? 0),
      present: present[server] ?? 0,
    };
    servers.push(tally);
  }
  const [tail] = await sql<{ n: number; oldest: Date | null }[]>`
    select count(*)::int as n, min(at) as oldest from audit_events where seq > ${prevLast}`;
  for (const mismatch of await serverMismatches(sql))
    fail({
      kind: 'server_mismatch',
      sealNo: null,
      seq: mismatch.seq,
      server: mismatch.server,
      reason: `event ${mismatch.seq} names server ${mismatch.server} but was written by ${mismatch.role}, the role of ${mismatch.deployable}`,
    });
  const limit = options.unsealedLimitMs ?? UNSEALED_LIMIT_MS;
  const now = Date.now();
  const warnings: LogWarning[] = [];
  let oldest = tail!.oldest;
  for (const e of arrived.values()) if (!oldest || e.at < oldest) oldest = e.at;
  if (oldest && now - oldest.getTime() > limit)
    warnings.push({
      kind: 'unsealed_overdue',
      sealNo: null,
      reason: `the oldest unsealed event is from ${oldest.toISOString()}, more than ${Math.round(limit / 1000)} s ago: is the sealer running?`,
    });
  for (const [sealNo, o] of open)
    if (now - o.sealedAt.getTime() > limit)
      warnings.push({
        kind: 'open_overdue',
        sealNo,
        reason: `seal ${sealNo} has waited since ${o.sealedAt.toISOString()} for writers of numbers ${o.ranges.map(([f, t]) => (f === t ? `${f}` : `${f}–${t}`)).join(', ')} to end`,
      });
  return {
    ok: breaks.length === 0 && moreBreaks === 0,
    seals,
    sealedThrough: prevLast,
    newestSealAt,
    checkpoint: checkpoint
      ? { sealNo: checkpoint.sealNo, lastSeq: checkpoint.lastSeq, prunedBefore: checkpoint.prunedBefore }
      : null,
    servers,
    breaks,
    moreBreaks,
    unsealed: { count: tail!.n + arrived.size, oldestAt: oldest },
    warnings,
  };
}

/** Events whose server is not the one their writing role serves (only the owner could have written them so). */
async function serverMismatches(
  sql: Sql,
): Promise<{ seq: number; server: string; role: string; deployable: string }[]> {
  const rows = await sql<{ seq: string; server: string; role: string; deployable: string }[]>`
    with roles as (
      select r.db_role, bulkhead_deployable_of(r.db_role) as deployable
      from (select distinct db_role from audit_events) r)
    select e.seq, e.server, e.db_role as role, roles.deployable from audit_events e join roles using (db_role)
    where roles.deployable is not null and roles.deployable <> e.server
    order by e.seq limit 1000`;
  return rows.map((r) => ({ ...r, seq: Number(r.seq) }));
}
