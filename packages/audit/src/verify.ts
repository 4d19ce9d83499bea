import type { Sql } from '@bulkhead/db';
import type { CheckpointCoverage } from './checkpoint-walk.ts';
import { closeRanges } from './open-ranges.ts';
import { same } from './hash.ts';
import {
  GENESIS_MAC,
  readCheckpoint,
  SEAL_COLUMNS,
  sealMac,
  signCheckpoint,
  toSeal,
  UNSEALED_LIMIT_MS,
  type Counts,
  type PruneCheckpoint,
  type Seal,
} from './seal.ts';
import { eventDigest, readBodies, readBodiesIn } from './sealed-body.ts';

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
    | 'approval_undecided'
    | 'sealer_stalled'
    /** Checked with the public key (`verify --public-key`): a checkpoint not signed by it. */
    | 'checkpoint_signature'
    /** A checkpoint that does not follow the one before it: checkpoints deleted, replaced or reordered. */
    | 'checkpoint_chain'
    /** Checked with a TSA's certificate: a checkpoint's timestamp by another TSA, or later than it claims. */
    | 'checkpoint_timestamp';
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
  /**
   * Only when checked with the public key: how far signed checkpoints cover the log. `seals` and
   * `sealedThrough` then count checkpoints, and `unsealed` is the tail no checkpoint covers yet.
   */
  coverage?: CheckpointCoverage;
}

type Fail = (b: LogBreak) => void;
type Anchor = { sealNo: number; mac: string } | undefined;

/** Where the walk through the seals stands, and what it has counted so far. */
interface Walk {
  /** The MAC, number and last event number of the seal before (or of the prune checkpoint). */
  prevMac: string;
  prevNo: number;
  prevLast: number;
  /** Per server: the events the seals account for, from the checkpoint's totals on. */
  totals: Counts;
  /** Per server: the sealed events still present. */
  present: Counts;
  seals: number;
  events: number;
  newestSealAt: Date | null;
  anchorSeen: boolean;
  /** Seals left open for running writers, as of the seal before. */
  pending: number[];
  /** Their open ranges. */
  open: Map<number, { ranges: [number, number][]; sealedAt: Date }>;
  /** Events that arrived in those ranges since, not sealed yet. */
  arrived: Map<number, { sealNo: number; server: string; at: Date }>;
}

/** Starts the walk after the prune checkpoint (checking its signature) and names events left in the pruned range. */
async function startWalk(
  sql: Sql,
  key: string,
  checkpoint: PruneCheckpoint | undefined,
  fail: Fail,
): Promise<Walk> {
  if (checkpoint && !same(checkpoint.signature, signCheckpoint(key, checkpoint)))
    fail({
      kind: 'checkpoint_invalid',
      sealNo: checkpoint.sealNo,
      seq: null,
      server: null,
      reason: 'the prune checkpoint is not signed with this key (forged, or another key)',
    });
  const walk: Walk = {
    prevMac: checkpoint?.mac ?? GENESIS_MAC,
    prevNo: checkpoint?.sealNo ?? 0,
    prevLast: checkpoint?.lastSeq ?? 0,
    totals: { ...checkpoint?.totals },
    present: {},
    seals: 0,
    events: 0,
    newestSealAt: null,
    anchorSeen: false,
    pending: [],
    open: new Map(),
    arrived: new Map(),
  };
  const [stale] = await sql<{ n: number; first: string | null }[]>`
    select count(*)::int as n, min(seq) as first from audit_events where seq <= ${walk.prevLast}`;
  if (stale!.n > 0)
    fail({
      kind: 'event_in_pruned_range',
      sealNo: checkpoint?.sealNo ?? null,
      seq: Number(stale!.first),
      server: null,
      reason: `${stale!.n} event(s) numbered at or below ${walk.prevLast}, ${checkpoint ? 'in the pruned range' : 'before the first number'}: inserted afterwards`,
    });
  return walk;
}

/** Checks the seal record itself: its number, its MAC and link to the seal before, the anchor, a remade seal. */
function checkSealRecord(key: string, seal: Seal, walk: Walk, anchor: Anchor, fail: Fail): void {
  const { prevNo, prevMac, prevLast } = walk;
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
  if (anchor && seal.sealNo === anchor.sealNo) {
    walk.anchorSeen = true;
    if (!same(seal.mac, anchor.mac))
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
}

/**
 * Checks the digest of every event the seal covers, and names events inside its range that it does not
 * cover and sealed events that are missing. Events in the seal's own open ranges are set aside as arrived.
 */
async function checkSealedEvents(sql: Sql, key: string, seal: Seal, walk: Walk, fail: Fail): Promise<void> {
  const expected = new Map<number, Buffer>();
  seal.seqs.forEach((seq, i) => expected.set(seq, seal.digests.subarray(i * 8, i * 8 + 8)));
  const own = seal.openRanges ?? [];
  const late = seal.seqs.filter((seq) => seq < seal.firstSeq);
  const format = seal.bodyFormat ?? 1;
  const bodies = await sql.begin(async (tx) => [
    ...(late.length
      ? await readBodiesIn(
          tx,
          late.map((seq) => [seq, seq] as const),
          format,
        )
      : []),
    ...(await readBodies(tx, seal.firstSeq - 1, seal.lastSeq, seal.events + 100_000, format)),
  ]);
  for (const e of bodies) {
    const digest = expected.get(e.seq);
    if (!digest && own.some(([from, to]) => e.seq >= from && e.seq <= to)) {
      // Committed after this seal was made, by a writer it waited for: the seal that closes it seals it.
      walk.arrived.set(e.seq, { sealNo: seal.sealNo, server: e.server, at: e.at });
      continue;
    }
    walk.events++;
    walk.arrived.delete(e.seq);
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
    walk.present[e.server] = (walk.present[e.server] ?? 0) + 1;
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
}

/**
 * Closes the open seals this seal closes: an event that arrived in one of their ranges and that this
 * seal did not seal was inserted afterwards. Records the seal's own open ranges.
 */
function closeOpenSeals(seal: Seal, walk: Walk, fail: Fail): void {
  const closer = `was not sealed when seal ${seal.sealNo} closed it`;
  for (const n of closeRanges(walk, seal.pending ?? [], closer, fail)) walk.open.delete(n);
  const own = seal.openRanges ?? [];
  if (own.length) walk.open.set(seal.sealNo, { ranges: own, sealedAt: seal.sealedAt });
}

/** Walks every seal after the checkpoint, in order, 200 at a time. */
async function walkSeals(
  sql: Sql,
  key: string,
  walk: Walk,
  options: { anchor?: Anchor; onProgress?: ((seals: number, events: number) => void) | undefined },
  fail: Fail,
): Promise<void> {
  for (let after = walk.prevNo; ;) {
    const rows = await sql<Parameters<typeof toSeal>[0][]>`
      select ${sql.unsafe(SEAL_COLUMNS)} from audit_seals where seal_no > ${after} order by seal_no limit 200`;
    if (rows.length === 0) return;
    for (const row of rows) {
      const seal: Seal = toSeal(row);
      after = seal.sealNo;
      walk.seals++;
      walk.newestSealAt = seal.sealedAt;
      checkSealRecord(key, seal, walk, options.anchor, fail);
      for (const [server, n] of Object.entries(seal.counts))
        walk.totals[server] = (walk.totals[server] ?? 0) + n;
      await checkSealedEvents(sql, key, seal, walk, fail);
      closeOpenSeals(seal, walk, fail);
      walk.prevMac = seal.mac;
      walk.prevNo = seal.sealNo;
      walk.prevLast = seal.lastSeq;
      options.onProgress?.(walk.seals, walk.events);
    }
  }
}

/**
 * What only the whole log shows: seals made and gone from the end (by the count of seals made, and by
 * the anchor), approvals that ran without their decision event, events written under another server.
 */
async function checkEnd(sql: Sql, walk: Walk, anchor: Anchor, fail: Fail): Promise<void> {
  const { prevNo } = walk;
  await checkSealsMade(sql, prevNo, fail);
  await checkUndecided(sql, fail);
  if (anchor && !walk.anchorSeen && anchor.sealNo > prevNo)
    fail({
      kind: 'anchor_mismatch',
      sealNo: anchor.sealNo,
      seq: null,
      server: null,
      reason: `the anchor records seal ${anchor.sealNo}, but the log ends at seal ${prevNo}: seals were deleted from the end`,
    });
  await checkServers(sql, fail);
}

/** Seals made and gone from the end: the count of seals made is past `prevNo`, where the log ends. */
export async function checkSealsMade(sql: Sql, prevNo: number, fail: Fail): Promise<void> {
  const [made] = await sql<{ n: string }[]>`select last_value as n from public.audit_seals_made`;
  if (Number(made!.n) > prevNo)
    fail({
      kind: 'seal_missing',
      sealNo: prevNo + 1,
      seq: null,
      server: null,
      reason: `seals up to ${made!.n} were made, but the log ends at seal ${prevNo}: seals were deleted from the end`,
    });
}

/** Approvals that ran without their decision event. */
export async function checkUndecided(sql: Sql, fail: Fail): Promise<void> {
  for (const a of await sql<{ id: string; server: string; status: string; decidedBy: string | null }[]>`
    select approval_id as id, server, status, decided_by as "decidedBy" from bulkhead_audit_undecided_approvals()`)
    fail({
      kind: 'approval_undecided',
      sealNo: null,
      seq: null,
      server: a.server,
      reason: `approval ${a.id} (${a.server}) is ${a.status}${a.decidedBy ? `, decided by ${a.decidedBy},` : ''} but its approved decision event is missing from the log`,
    });
}

/** Events written under another server than their writing role serves. */
export async function checkServers(sql: Sql, fail: Fail): Promise<void> {
  for (const mismatch of await serverMismatches(sql))
    fail({
      kind: 'server_mismatch',
      sealNo: null,
      seq: mismatch.seq,
      server: mismatch.server,
      reason: `event ${mismatch.seq} names server ${mismatch.server} but was written by ${mismatch.role}, the role of ${mismatch.deployable}`,
    });
}

/** Per server, sorted: the events sealed since the checkpoint, and those present. */
function tallies(walk: Walk, baseTotals: Counts): ServerTally[] {
  const { totals, present } = walk;
  return [...new Set([...Object.keys(totals), ...Object.keys(present)])].sort().map((server) => ({
    server,
    sealed: (totals[server] ?? 0) - (baseTotals[server] ?? 0),
    present: present[server] ?? 0,
  }));
}

/**
 * A sealer that stalled: an event still unsealed `limit` after it was written. Sealing is part of the
 * log's integrity (a sealer that fails on every round, as one oversized row once made it, leaves every
 * later event open to change), so this is a break, not only the warning below.
 */
export function stalled(oldest: Date | null, limit: number): LogBreak[] {
  if (!oldest || Date.now() - oldest.getTime() <= limit) return [];
  return [
    {
      kind: 'sealer_stalled',
      sealNo: null,
      seq: null,
      server: null,
      reason: `the oldest unsealed event is from ${oldest.toISOString()}, more than ${Math.round(limit / 1000)} s ago: the sealer is stopped or fails on every round (see its log)`,
    },
  ];
}

/** An unsealed event older than `limit`, and seals waiting that long for their writers. */
function overdue(walk: Walk, oldest: Date | null, limit: number): LogWarning[] {
  const now = Date.now();
  const warnings: LogWarning[] = [];
  if (oldest && now - oldest.getTime() > limit)
    warnings.push({
      kind: 'unsealed_overdue',
      sealNo: null,
      reason: `the oldest unsealed event is from ${oldest.toISOString()}, more than ${Math.round(limit / 1000)} s ago: is the sealer running?`,
    });
  for (const [sealNo, o] of walk.open)
    if (now - o.sealedAt.getTime() > limit)
      warnings.push({
        kind: 'open_overdue',
        sealNo,
        reason: `seal ${sealNo} has waited since ${o.sealedAt.toISOString()} for writers of numbers ${o.ranges.map(([f, t]) => (f === t ? `${f}` : `${f}–${t}`)).join(', ')} to end`,
      });
  return warnings;
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
 * `unsealedLimitMs` is a break (`sealer_stalled`) and a warning; a seal waiting that long for a writer
 * is a warning.
 */
export async function verifyLog(
  sql: Sql,
  options: {
    key: string;
    anchor?: { sealNo: number; mac: string } | undefined;
    maxBreaks?: number;
    /** An unsealed event older than this is a break, `sealer_stalled` (default {@link UNSEALED_LIMIT_MS}). */
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
  const walk = await startWalk(sql, key, checkpoint, fail);
  const baseTotals = { ...walk.totals };
  await walkSeals(sql, key, walk, options, fail);
  await checkEnd(sql, walk, options.anchor, fail);

  const [tail] = await sql<{ n: number; oldest: Date | null }[]>`
    select count(*)::int as n, min(at) as oldest from audit_events where seq > ${walk.prevLast}`;
  let oldest = tail!.oldest;
  for (const e of walk.arrived.values()) if (!oldest || e.at < oldest) oldest = e.at;
  const limit = options.unsealedLimitMs ?? UNSEALED_LIMIT_MS;
  for (const b of stalled(oldest, limit)) fail(b);
  return {
    ok: breaks.length === 0 && moreBreaks === 0,
    seals: walk.seals,
    sealedThrough: walk.prevLast,
    newestSealAt: walk.newestSealAt,
    checkpoint: checkpoint
      ? { sealNo: checkpoint.sealNo, lastSeq: checkpoint.lastSeq, prunedBefore: checkpoint.prunedBefore }
      : null,
    servers: tallies(walk, baseTotals),
    breaks,
    moreBreaks,
    unsealed: { count: tail!.n + walk.arrived.size, oldestAt: oldest },
    warnings: overdue(walk, oldest, limit),
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
