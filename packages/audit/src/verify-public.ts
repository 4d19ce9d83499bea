import type { KeyObject, X509Certificate } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { keyFingerprint, readCheckpoints, type SignedCheckpoint } from './checkpoint.ts';
import {
  walkCheckpoints,
  type CheckpointCoverage,
  type CheckpointSource,
  type CheckpointWalk,
} from './checkpoint-walk.ts';
import { readTimestamp } from './checkpoint-timestamps.ts';
import { readCheckpoint, UNSEALED_LIMIT_MS } from './seal.ts';
import { readBodies, readBodiesIn } from './sealed-body.ts';
import {
  checkSealsMade,
  checkServers,
  checkUndecided,
  stalled,
  type LogBreak,
  type LogReport,
  type ServerTally,
} from './verify.ts';

/** The checkpoints and sealed bodies of the database, a batch of checkpoints at a time. */
function databaseSource(sql: Sql): CheckpointSource {
  return {
    async *checkpoints() {
      for (let after = 0; ;) {
        const batch = await readCheckpoints(sql, after, 100);
        if (batch.length === 0) return;
        yield* batch;
        after = batch[batch.length - 1]!.sealNo;
      }
    },
    events: (after, upTo, late, format) =>
      sql.begin(async (tx) => [
        ...(await readBodiesIn(
          tx,
          late.map((seq) => [seq, seq] as const),
          format,
        )),
        ...(await readBodies(tx, after, upTo, upTo - after + late.length + 1, format)),
      ]),
    timestampOf: (c) => readTimestamp(sql, c.sealNo),
  };
}

/** Per server, sorted: the events the checkpoints list, and those of them present. */
export function checkpointTallies(walk: CheckpointWalk): ServerTally[] {
  return [...new Set([...Object.keys(walk.sealed), ...Object.keys(walk.present)])].sort().map((server) => ({
    server,
    sealed: walk.sealed[server] ?? 0,
    present: walk.present[server] ?? 0,
  }));
}

/** The coverage part of a report. */
export function coverageOf(
  walk: CheckpointWalk,
  publicKey: KeyObject,
  tsa: X509Certificate | undefined,
): CheckpointCoverage {
  const last: SignedCheckpoint | undefined = walk.prev;
  return {
    checkpoints: walk.checkpoints,
    firstSeal: walk.first?.sealNo ?? null,
    lastSeal: last?.sealNo ?? null,
    from: walk.first ? Math.min(walk.first.firstSeq, ...walk.first.seqs) : null,
    through: last?.lastSeq ?? null,
    gaps: walk.gaps,
    keyId: keyFingerprint(publicKey),
    timestamped: tsa ? walk.timestamped : null,
  };
}

/**
 * Checks the log against its signed checkpoints with only the public key — no `BULKHEAD_AUDIT_KEY`:
 * each checkpoint's signature and its link to the one before, each listed event's SHA-256 (a changed,
 * renumbered or missing event is named by number, an event inserted into a covered range too), events
 * left in a pruned range, seals made and gone from the end, approvals that ran without their decision
 * event and events written under another server. Events after the newest checkpoint are the uncovered
 * tail, reported as the unsealed one is (a break, `sealer_stalled`, once older than `unsealedLimitMs`).
 */
export async function verifyLogWithPublicKey(
  sql: Sql,
  options: {
    publicKey: KeyObject;
    /** The TSA's certificate: checkpoints' timestamps are checked with it. */
    tsa?: X509Certificate | undefined;
    maxBreaks?: number;
    unsealedLimitMs?: number;
    onProgress?: (checkpoints: number, events: number) => void;
  },
): Promise<LogReport> {
  const maxBreaks = options.maxBreaks ?? 1000;
  const breaks: LogBreak[] = [];
  let moreBreaks = 0;
  const fail = (b: LogBreak) => {
    if (breaks.length < maxBreaks) breaks.push(b);
    else moreBreaks++;
  };
  const pruned = await readCheckpoint(sql);
  const base = pruned?.lastSeq ?? 0;
  const [stale] = await sql<{ n: number; first: string | null }[]>`
    select count(*)::int as n, min(seq) as first from audit_events where seq <= ${base}`;
  if (stale!.n > 0)
    fail({
      kind: 'event_in_pruned_range',
      sealNo: pruned?.sealNo ?? null,
      seq: Number(stale!.first),
      server: null,
      reason: `${stale!.n} event(s) numbered at or below ${base}, ${pruned ? 'in the pruned range' : 'before the first number'}: inserted afterwards`,
    });
  const walk = await walkCheckpoints(databaseSource(sql), options.publicKey, fail, {
    firstChainsTo: (prev) => prev === null || (pruned !== undefined && prev <= pruned.sealNo),
    onProgress: options.onProgress,
    tsa: options.tsa,
  });
  const [newest] = await sql<{ n: string | null }[]>`select max(seal_no) as n from audit_seals`;
  await checkSealsMade(sql, Number(newest!.n ?? pruned?.sealNo ?? 0), fail);
  await checkUndecided(sql, fail);
  await checkServers(sql, fail);
  const coveredThrough = walk.prev?.lastSeq ?? base;
  const [tail] = await sql<{ n: number; oldest: Date | null }[]>`
    select count(*)::int as n, min(at) as oldest from audit_events where seq > ${coveredThrough}`;
  let oldest = tail!.oldest;
  for (const e of walk.arrived.values()) if (!oldest || e.at < oldest) oldest = e.at;
  for (const b of stalled(oldest, options.unsealedLimitMs ?? UNSEALED_LIMIT_MS))
    fail({
      ...b,
      reason: `${b.reason.replace('oldest unsealed event', 'oldest event no checkpoint covers')} (or seals without BULKHEAD_AUDIT_SIGNING_KEY_FILE)`,
    });
  // Every event present that no checkpoint covers: the tail, those arrived in open ranges, and those
  // sealed before signing began or while it was off.
  const [all] = await sql<{ n: number }[]>`select count(*)::int as n from audit_events where seq > ${base}`;
  return {
    ok: breaks.length === 0 && moreBreaks === 0,
    seals: walk.checkpoints,
    sealedThrough: coveredThrough,
    newestSealAt: walk.prev?.sealedAt ?? null,
    checkpoint: pruned
      ? { sealNo: pruned.sealNo, lastSeq: pruned.lastSeq, prunedBefore: pruned.prunedBefore }
      : null,
    servers: checkpointTallies(walk),
    breaks,
    moreBreaks,
    unsealed: { count: all!.n - walk.events, oldestAt: oldest },
    warnings: [],
    coverage: coverageOf(walk, options.publicKey, options.tsa),
  };
}
