import { timingSafeEqual } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import {
  eventDigest,
  GENESIS_MAC,
  readBodies,
  readCheckpoint,
  SEAL_COLUMNS,
  sealMac,
  signCheckpoint,
  toSeal,
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
    | 'anchor_mismatch';
  /** The seal the break was found in, when there is one. */
  sealNo: number | null;
  /** The event's sequence number, when the break is about one event. */
  seq: number | null;
  server: string | null;
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
  /** Events after the newest seal: not yet covered by any seal. */
  unsealed: { count: number; oldestAt: Date | null };
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
 */
export async function verifyLog(
  sql: Sql,
  options: {
    key: string;
    anchor?: { sealNo: number; mac: string } | undefined;
    maxBreaks?: number;
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
      for (const [server, n] of Object.entries(seal.counts)) totals[server] = (totals[server] ?? 0) + n;
      const expected = new Map<number, Buffer>();
      seal.seqs.forEach((seq, i) => expected.set(seq, seal.digests.subarray(i * 8, i * 8 + 8)));
      const bodies = await sql.begin((tx) =>
        readBodies(tx, seal.firstSeq - 1, seal.lastSeq, seal.events + 100_000),
      );
      for (const e of bodies) {
        events++;
        const digest = expected.get(e.seq);
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
      prevMac = seal.mac;
      prevNo = seal.sealNo;
      prevLast = seal.lastSeq;
      options.onProgress?.(seals, events);
    }
  }

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
    unsealed: { count: tail!.n, oldestAt: tail!.oldest },
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
