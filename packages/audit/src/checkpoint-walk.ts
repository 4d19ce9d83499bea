import type { KeyObject, X509Certificate } from 'node:crypto';
import {
  bodyDigest,
  checkpointHash,
  digestAt,
  keyFingerprint,
  signatureHolds,
  type SignedCheckpoint,
} from './checkpoint.ts';
import { timestampProblem } from './checkpoint-timestamps.ts';
import type { BodyFormat } from './sealed-body.ts';
import { closeRanges } from './open-ranges.ts';
import type { LogBreak } from './verify.ts';

// The check of signed checkpoints against the events they list, with only the public key: the same
// walk for the database (`audit verify --public-key`) and for an export (`audit verify --file`).

/** An event as a checkpoint covers it: its number, and its sealed body as PostgreSQL rendered it. */
export interface SealedBody {
  seq: number;
  server: string;
  at: Date;
  body: string;
}

/** Where the checkpoints and their events come from. */
export interface CheckpointSource {
  /** Every checkpoint, in seal order. */
  checkpoints(): AsyncIterable<SignedCheckpoint>;
  /** The events numbered in (after, upTo], and those numbered `late`, with bodies in `format`. */
  events(after: number, upTo: number, late: readonly number[], format: BodyFormat): Promise<SealedBody[]>;
  /** The checkpoint's RFC 3161 timestamp token, if it has one. */
  timestampOf(c: SignedCheckpoint): Promise<Buffer | undefined>;
}

/** Where the walk stands, and what it has counted. */
export interface CheckpointWalk {
  prev: SignedCheckpoint | undefined;
  first: SignedCheckpoint | undefined;
  checkpoints: number;
  /** Checkpoints whose timestamp holds (when a TSA certificate is given). */
  timestamped: number;
  events: number;
  /** Per server: events the checkpoints list, and those of them present. */
  sealed: Record<string, number>;
  present: Record<string, number>;
  /** Numbers no checkpoint covers between two checkpoints (seals made while signing was off). */
  gaps: [number, number][];
  /** Seals left open for running writers, as of the checkpoint before. */
  pending: number[];
  /** Events that arrived in a range a checkpoint left open, not covered yet. */
  arrived: Map<number, { sealNo: number; server: string; at: Date }>;
}

export /** How far signed checkpoints cover the log. */
interface CheckpointCoverage {
  checkpoints: number;
  /** The seals of the first and the newest checkpoint checked; null when there is none. */
  firstSeal: number | null;
  lastSeal: number | null;
  /** Event numbers from the first checkpoint's range to the newest's; null when there is none. */
  from: number | null;
  through: number | null;
  /** Numbers between checkpoints that no checkpoint covers (seals made while signing was off). */
  gaps: [number, number][];
  /** The fingerprint of the public key checked against. */
  keyId: string;
  /** Checkpoints with a timestamp that holds; null when no TSA certificate was given. */
  timestamped: number | null;
}

type Fail = (b: LogBreak) => void;

export function startCheckpointWalk(): CheckpointWalk {
  return {
    prev: undefined,
    first: undefined,
    checkpoints: 0,
    timestamped: 0,
    events: 0,
    sealed: {},
    present: {},
    gaps: [],
    pending: [],
    arrived: new Map(),
  };
}

/** The signature (by the given key) and the link to the checkpoint before. */
function checkRecord(
  c: SignedCheckpoint,
  walk: CheckpointWalk,
  publicKey: KeyObject,
  keyId: string,
  fail: Fail,
): void {
  const at = { sealNo: c.sealNo, seq: null, server: null };
  if (c.keyId !== keyId)
    fail({
      kind: 'checkpoint_signature',
      ...at,
      reason: `checkpoint of seal ${c.sealNo} names signing key ${c.keyId.slice(0, 16)}…, not the given public key ${keyId.slice(0, 16)}…: signed by another key`,
    });
  else if (!signatureHolds(c, publicKey))
    fail({
      kind: 'checkpoint_signature',
      ...at,
      reason: `checkpoint of seal ${c.sealNo} does not match its signature: changed, or signed by another key`,
    });
  const prev = walk.prev;
  if (!prev) return;
  if (c.prevSealNo !== prev.sealNo)
    fail({
      kind: 'checkpoint_chain',
      ...at,
      reason:
        c.prevSealNo !== null && c.prevSealNo > prev.sealNo
          ? `the checkpoint of seal ${c.sealNo} follows the one of seal ${c.prevSealNo}, but the checkpoints after seal ${prev.sealNo} up to it are missing`
          : `the checkpoint of seal ${c.sealNo} does not continue the one before it (seal ${prev.sealNo})`,
    });
  else if (c.prevHash !== checkpointHash(prev))
    fail({
      kind: 'checkpoint_chain',
      ...at,
      reason: `the checkpoint of seal ${c.sealNo} was chained to another checkpoint of seal ${prev.sealNo} than the one there now`,
    });
  else if (c.prevSealNo === c.sealNo - 1 && c.firstSeq !== prev.lastSeq + 1)
    fail({
      kind: 'checkpoint_chain',
      ...at,
      reason: `the checkpoint of seal ${c.sealNo} starts at event ${c.firstSeq}, not after the one before it (${prev.lastSeq})`,
    });
  if (c.prevSealNo !== null && c.prevSealNo < c.sealNo - 1 && c.firstSeq > prev.lastSeq + 1)
    walk.gaps.push([prev.lastSeq + 1, c.firstSeq - 1]);
}

/**
 * The digest of every event the checkpoint lists; events inside its range it does not list (inserted
 * afterwards, unless in its own open ranges: those arrived later); listed events that are missing.
 */
async function checkEvents(
  c: SignedCheckpoint,
  source: CheckpointSource,
  walk: CheckpointWalk,
  fail: Fail,
): Promise<void> {
  const expected = new Map<number, Buffer>();
  c.seqs.forEach((seq, i) => expected.set(seq, digestAt(c, i)));
  const own = c.openRanges ?? [];
  const late = c.seqs.filter((seq) => seq < c.firstSeq);
  for (const e of await source.events(c.firstSeq - 1, c.lastSeq, late, c.bodyFormat)) {
    const digest = expected.get(e.seq);
    if (!digest && own.some(([from, to]) => e.seq >= from && e.seq <= to)) {
      walk.arrived.set(e.seq, { sealNo: c.sealNo, server: e.server, at: e.at });
      continue;
    }
    walk.events++;
    walk.arrived.delete(e.seq);
    const where = `event ${e.seq} (${e.server}, ${e.at.toISOString()})`;
    if (!digest) {
      fail({
        kind: 'event_unsealed',
        sealNo: c.sealNo,
        seq: e.seq,
        server: e.server,
        reason: `${where} lies inside the checkpoint of seal ${c.sealNo} but is not listed in it: inserted afterwards`,
      });
      continue;
    }
    expected.delete(e.seq);
    walk.present[e.server] = (walk.present[e.server] ?? 0) + 1;
    if (!bodyDigest(e.body).equals(digest))
      fail({
        kind: 'event_changed',
        sealNo: c.sealNo,
        seq: e.seq,
        server: e.server,
        reason: `${where} differs from what the checkpoint of seal ${c.sealNo} signed: changed or renumbered`,
      });
  }
  for (const seq of expected.keys())
    fail({
      kind: 'event_missing',
      sealNo: c.sealNo,
      seq,
      server: null,
      reason: `event ${seq}, listed in the checkpoint of seal ${c.sealNo}, is missing`,
    });
}

/** Events that arrived in a range a now-closed seal left open, and that this checkpoint did not list. */
function closeOpen(c: SignedCheckpoint, walk: CheckpointWalk, fail: Fail): void {
  closeRanges(walk, c.pending, `the checkpoint of seal ${c.sealNo}, which closed it, does not list it`, fail);
}

/** A checkpoint's timestamp, where it has one: by the TSA, over this checkpoint, made when it says. */
async function checkTimestampOf(
  c: SignedCheckpoint,
  source: CheckpointSource,
  tsa: X509Certificate,
  walk: CheckpointWalk,
  fail: Fail,
): Promise<void> {
  const token = await source.timestampOf(c);
  if (!token) return;
  const problem = timestampProblem(c, token, tsa);
  if (problem)
    fail({ kind: 'checkpoint_timestamp', sealNo: c.sealNo, seq: null, server: null, reason: problem });
  else walk.timestamped++;
}

/**
 * Checks every checkpoint of `source` with `publicKey`: its signature, its link to the one before, and
 * each event it lists. `firstChainsTo` says whether the first checkpoint may follow the checkpoint of
 * the seal it names (pruned, or before an export's range); when it may not, that is a break.
 */
export async function walkCheckpoints(
  source: CheckpointSource,
  publicKey: KeyObject,
  fail: Fail,
  options: {
    firstChainsTo: (prevSealNo: number | null) => boolean;
    /** The TSA's certificate: each checkpoint's timestamp, where it has one, is checked with it. */
    tsa?: X509Certificate | undefined;
    onProgress?: ((checkpoints: number, events: number) => void) | undefined;
  },
): Promise<CheckpointWalk> {
  const keyId = keyFingerprint(publicKey);
  const walk = startCheckpointWalk();
  for await (const c of source.checkpoints()) {
    if (!walk.first) {
      walk.first = c;
      if (!options.firstChainsTo(c.prevSealNo))
        fail({
          kind: 'checkpoint_chain',
          sealNo: c.sealNo,
          seq: null,
          server: null,
          reason: `the first checkpoint, of seal ${c.sealNo}, follows the one of seal ${c.prevSealNo}, which is missing (and was not pruned)`,
        });
    }
    checkRecord(c, walk, publicKey, keyId, fail);
    if (options.tsa) await checkTimestampOf(c, source, options.tsa, walk, fail);
    for (const [server, n] of Object.entries(c.counts)) walk.sealed[server] = (walk.sealed[server] ?? 0) + n;
    await checkEvents(c, source, walk, fail);
    closeOpen(c, walk, fail);
    walk.prev = c;
    walk.checkpoints++;
    options.onProgress?.(walk.checkpoints, walk.events);
  }
  return walk;
}
