import type { KeyObject, X509Certificate } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { readCheckpointsMeeting, type SignedCheckpoint } from './checkpoint.ts';
import { readTimestamp } from './checkpoint-timestamps.ts';
import { walkCheckpoints, type CheckpointSource, type SealedBody } from './checkpoint-walk.ts';
import { BODY_FORMAT, readBodies, type BodyFormat } from './sealed-body.ts';
import type { LogBreak, LogReport } from './verify.ts';
import { checkpointTallies, coverageOf } from './verify-public.ts';

// The auditor's kit (issue 49): `audit export --with-checkpoints` writes the events of a time range as
// they were sealed, with the signed checkpoints covering them, in one JSON Lines file; `audit verify
// --file` checks such a file with only the public key — no database, no Bulkhead secret.

/** What the first line of a checkpointed export says it is. */
export const CHECKPOINTED_EXPORT = 'bulkhead-audit-export-with-checkpoints';

/** A checkpoint as a line of the export: every signed field, snake_case, digests in hex. */
function checkpointJson(c: SignedCheckpoint) {
  return {
    seal_no: c.sealNo,
    sealed_at: c.sealedAt.toISOString(),
    first_seq: c.firstSeq,
    last_seq: c.lastSeq,
    seqs: c.seqs,
    digests: c.digests.toString('hex'),
    counts: c.counts,
    open_ranges: c.openRanges,
    pending: c.pending,
    body_format: c.bodyFormat,
    prev_seal_no: c.prevSealNo,
    prev_hash: c.prevHash,
    key_id: c.keyId,
    signature: c.signature,
  };
}

type CheckpointJson = ReturnType<typeof checkpointJson>;

function fromCheckpointJson(j: CheckpointJson): SignedCheckpoint {
  return {
    sealNo: j.seal_no,
    sealedAt: new Date(j.sealed_at),
    firstSeq: j.first_seq,
    lastSeq: j.last_seq,
    seqs: j.seqs,
    digests: Buffer.from(j.digests, 'hex'),
    counts: j.counts,
    openRanges: j.open_ranges,
    pending: j.pending,
    bodyFormat: j.body_format as BodyFormat,
    prevSealNo: j.prev_seal_no,
    prevHash: j.prev_hash,
    keyId: j.key_id,
    signature: j.signature,
  };
}

/**
 * Writes the events written in [since, until) and the checkpoints whose seals cover any of them, with
 * every other event those checkpoints list (so that each can be checked whole): a header line, the
 * checkpoints in seal order, then the events in number order, each as `{"event":{"seq","body"}}` where
 * `body` is the event's sealed body, exactly the text its checkpoint's SHA-256 covers.
 */
export async function writeCheckpointedExport(
  sql: Sql,
  range: { since: Date; until?: Date | undefined },
  write: (chunk: string) => Promise<void>,
): Promise<{ events: number; checkpoints: number }> {
  const [span] = await sql<{ lo: string | null; hi: string | null }[]>`
    select min(seq) as lo, max(seq) as hi from audit_events
    where at >= ${range.since} ${range.until ? sql`and at < ${range.until}` : sql``}`;
  await write(
    `${JSON.stringify({
      format: CHECKPOINTED_EXPORT,
      version: 1,
      since: range.since.toISOString(),
      until: range.until?.toISOString() ?? null,
      exported_at: new Date().toISOString(),
    })}\n`,
  );
  if (span!.lo === null || span!.hi === null) return { events: 0, checkpoints: 0 };
  const checkpoints = await readCheckpointsMeeting(sql, Number(span!.lo), Number(span!.hi));
  for (const c of checkpoints) {
    // Its RFC 3161 token (base64), checked with the TSA's certificate alone; null when it has none.
    const token = await readTimestamp(sql, c.sealNo);
    await write(
      `${JSON.stringify({ checkpoint: checkpointJson(c), timestamp: token?.toString('base64') ?? null })}\n`,
    );
  }
  const from = Math.min(Number(span!.lo), ...checkpoints.flatMap((c) => [c.firstSeq, ...c.seqs]));
  const to = Math.max(Number(span!.hi), ...checkpoints.map((c) => c.lastSeq));
  let events = 0;
  for (let after = from - 1; ;) {
    const batch = await sql.begin((tx) => readBodies(tx, after, to, 1000, BODY_FORMAT));
    for (const e of batch) await write(`${JSON.stringify({ event: { seq: e.seq, body: e.body } })}\n`);
    events += batch.length;
    if (batch.length < 1000) return { events, checkpoints: checkpoints.length };
    after = batch[batch.length - 1]!.seq;
  }
}

/** A checkpointed export, read: its checkpoints and its events by number. */
interface ExportFile {
  checkpoints: SignedCheckpoint[];
  timestamps: Map<number, Buffer>;
  events: Map<number, SealedBody>;
}

/** Reads a checkpointed export; throws a sentence naming the line when it is not one. */
export function readCheckpointedExport(text: string): ExportFile {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines.length ? (JSON.parse(lines[0]!) as { format?: unknown }) : {};
  if (header.format !== CHECKPOINTED_EXPORT)
    throw new Error(
      `not an export with checkpoints (its first line has no "format": "${CHECKPOINTED_EXPORT}")`,
    );
  const file: ExportFile = { checkpoints: [], timestamps: new Map(), events: new Map() };
  lines.slice(1).forEach((line, i) => {
    const parsed = JSON.parse(line) as {
      checkpoint?: CheckpointJson;
      timestamp?: string | null;
      event?: { seq: number; body: string };
    };
    if (parsed.checkpoint) {
      file.checkpoints.push(fromCheckpointJson(parsed.checkpoint));
      if (parsed.timestamp)
        file.timestamps.set(parsed.checkpoint.seal_no, Buffer.from(parsed.timestamp, 'base64'));
    } else if (parsed.event && typeof parsed.event.body === 'string') {
      // Server and time only name the event in a break; what is checked is the body's digest.
      const fields = JSON.parse(parsed.event.body) as { server?: unknown; at?: unknown };
      file.events.set(parsed.event.seq, {
        seq: parsed.event.seq,
        server: typeof fields.server === 'string' ? fields.server : '?',
        at: new Date(typeof fields.at === 'string' ? fields.at : 0),
        body: parsed.event.body,
      });
    } else throw new Error(`line ${i + 2} is neither a checkpoint nor an event`);
  });
  return file;
}

function fileSource(file: ExportFile): CheckpointSource {
  return {
    async *checkpoints() {
      yield* [...file.checkpoints].sort((a, b) => a.sealNo - b.sealNo);
    },
    events(after, upTo, late) {
      const inRange = [...file.events.values()].filter((e) => e.seq > after && e.seq <= upTo);
      const early = late.flatMap((seq) => file.events.get(seq) ?? []);
      return Promise.resolve([...early, ...inRange.sort((a, b) => a.seq - b.seq)]);
    },
    timestampOf: (c) => Promise.resolve(file.timestamps.get(c.sealNo)),
  };
}

/**
 * Checks a checkpointed export with only the public key, as `verify --public-key` checks the database:
 * every checkpoint's signature and its link to the one before it in the file, every listed event's
 * digest, events inside a checkpoint's range it does not list, listed events missing from the file.
 * Events of the file no checkpoint covers are counted as `unsealed`.
 */
export async function verifyExport(
  text: string,
  publicKey: KeyObject,
  tsa?: X509Certificate | undefined,
): Promise<LogReport> {
  const file = readCheckpointedExport(text);
  const breaks: LogBreak[] = [];
  // The first checkpoint of an export follows one before its range: only the links within it are checked.
  const walk = await walkCheckpoints(fileSource(file), publicKey, (b) => breaks.push(b), {
    firstChainsTo: () => true,
    tsa,
  });
  const covered = new Set(file.checkpoints.flatMap((c) => c.seqs));
  const outside = [...file.events.values()].filter(
    (e) =>
      !covered.has(e.seq) &&
      !file.checkpoints.some((c) => e.seq >= c.firstSeq && e.seq <= c.lastSeq && !walk.arrived.has(e.seq)),
  );
  let oldest: Date | null = null;
  for (const e of outside) if (!oldest || e.at < oldest) oldest = e.at;
  return {
    ok: breaks.length === 0,
    seals: walk.checkpoints,
    sealedThrough: walk.prev?.lastSeq ?? 0,
    newestSealAt: walk.prev?.sealedAt ?? null,
    checkpoint: null,
    servers: checkpointTallies(walk),
    breaks,
    moreBreaks: 0,
    unsealed: { count: outside.length, oldestAt: oldest },
    warnings: [],
    coverage: coverageOf(walk, publicKey, tsa),
  };
}
