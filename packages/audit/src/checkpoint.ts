import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import { canonicalJson } from './hash.ts';
import type { BodyFormat } from './sealed-body.ts';

// Signed checkpoints (issue 49): each seal signed with an Ed25519 key as well, over what anyone can
// recompute from the events themselves, so that verifying needs only the public key.

/** Where a checkpoint chain starts: the `prevHash` of the first checkpoint ever made. */
export const GENESIS_HASH = '0'.repeat(64);
/** Bytes of one event's digest in a checkpoint (SHA-256, whole: it is public, so nothing may be cut). */
export const CHECKPOINT_DIGEST_BYTES = 32;

/** One signed checkpoint: the events one seal sealed, each by the SHA-256 of its sealed body. */
export interface SignedCheckpoint {
  /** The seal it signs, and that seal's time. */
  sealNo: number;
  sealedAt: Date;
  firstSeq: number;
  lastSeq: number;
  /** The events the seal sealed (those of earlier seals' open ranges first), and their digests. */
  seqs: number[];
  digests: Buffer;
  /** Events per server in the seal. */
  counts: Record<string, number>;
  /** As the seal's: numbers left open for running writers, and the seals still open. */
  openRanges: [number, number][] | null;
  pending: number[];
  bodyFormat: BodyFormat;
  /** The seal of the checkpoint before (null for the first ever made), and its {@link checkpointHash}. */
  prevSealNo: number | null;
  prevHash: string;
  /** {@link keyFingerprint} of the key that signed it. */
  keyId: string;
  /** Ed25519 over {@link checkpointBytes}, base64. */
  signature: string;
}

/** The key the sealer signs checkpoints with. */
export interface CheckpointSigner {
  privateKey: KeyObject;
  keyId: string;
}

/** The sealer's option to sign each seal as a checkpoint too. */
export interface Signing {
  signer?: CheckpointSigner | undefined;
}

/** The SHA-256 of a public key's DER SPKI, hex: how a key is named in checkpoints and by `audit keys new`. */
export function keyFingerprint(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/** A signer from a PEM Ed25519 private key. */
export function checkpointSigner(privatePem: string): CheckpointSigner {
  const privateKey = createPrivateKey(privatePem);
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new Error(
      `the audit signing key is ${privateKey.asymmetricKeyType ?? 'not a key pair'}, not Ed25519`,
    );
  return { privateKey, keyId: keyFingerprint(createPublicKey(privateKey)) };
}

/** A public key from PEM (or from a private key's PEM), refused unless Ed25519. */
export function checkpointPublicKey(pem: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519')
    throw new Error(`the public key is ${key.asymmetricKeyType ?? 'unknown'}, not Ed25519`);
  return key;
}

/** The SHA-256 of an event's sealed body: what a checkpoint holds of each event. */
export function bodyDigest(body: string): Buffer {
  return createHash('sha256').update(body).digest();
}

/** The digest a checkpoint holds for its `index`-th event. */
export function digestAt(c: Pick<SignedCheckpoint, 'digests'>, index: number): Buffer {
  return c.digests.subarray(index * CHECKPOINT_DIGEST_BYTES, (index + 1) * CHECKPOINT_DIGEST_BYTES);
}

/**
 * The bytes a checkpoint's signature covers, one field a line: a verifier in any language rebuilds them
 * from the stored or exported fields. The events enter as one SHA-256 over their numbers and digests.
 */
export function checkpointBytes(c: Omit<SignedCheckpoint, 'signature'>): Buffer {
  const events = createHash('sha256').update(c.seqs.join(',')).update('\n').update(c.digests).digest('hex');
  return Buffer.from(
    [
      'bulkhead audit checkpoint 1',
      `seal ${c.sealNo}`,
      `time ${c.sealedAt.toISOString()}`,
      `range ${c.firstSeq} ${c.lastSeq}`,
      `events ${c.seqs.length} ${events}`,
      `counts ${canonicalJson(c.counts)}`,
      `open ${canonicalJson({ bodyFormat: c.bodyFormat, openRanges: c.openRanges, pending: c.pending })}`,
      `prev ${c.prevSealNo ?? '-'} ${c.prevHash}`,
      `key ${c.keyId}`,
    ].join('\n'),
    'utf8',
  );
}

/** The hash the next checkpoint chains to. */
export function checkpointHash(c: Omit<SignedCheckpoint, 'signature'>): string {
  return createHash('sha256').update(checkpointBytes(c)).digest('hex');
}

/** Whether `publicKey` signed `c` (as it stands). */
export function signatureHolds(c: SignedCheckpoint, publicKey: KeyObject): boolean {
  const { signature, ...body } = c;
  try {
    return verify(null, checkpointBytes(body), publicKey, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

const CHECKPOINT_COLUMNS = `seal_no as "sealNo", sealed_at as "sealedAt", first_seq as "firstSeq",
  last_seq as "lastSeq", seqs::text[] as seqs, digests, counts, open_ranges as "openRanges",
  pending::text[] as pending, body_format as "bodyFormat", prev_seal_no as "prevSealNo",
  prev_hash as "prevHash", key_id as "keyId", signature`;

interface CheckpointRow {
  sealNo: string;
  sealedAt: Date;
  firstSeq: string;
  lastSeq: string;
  seqs: string[];
  digests: Buffer;
  counts: Record<string, number>;
  openRanges: [number, number][] | null;
  pending: string[];
  bodyFormat: number;
  prevSealNo: string | null;
  prevHash: string;
  keyId: string;
  signature: string;
}

function toCheckpoint(row: CheckpointRow): SignedCheckpoint {
  return {
    ...row,
    sealNo: Number(row.sealNo),
    firstSeq: Number(row.firstSeq),
    lastSeq: Number(row.lastSeq),
    seqs: row.seqs.map(Number),
    pending: row.pending.map(Number),
    bodyFormat: row.bodyFormat as BodyFormat,
    prevSealNo: row.prevSealNo === null ? null : Number(row.prevSealNo),
  };
}

/** Up to `limit` checkpoints after seal `after`, in order. */
export async function readCheckpoints(
  sql: Sql | TransactionSql,
  after: number,
  limit: number,
): Promise<SignedCheckpoint[]> {
  const rows = await sql<CheckpointRow[]>`
    select ${sql.unsafe(CHECKPOINT_COLUMNS)} from public.audit_signed_checkpoints
    where seal_no > ${after} order by seal_no limit ${limit}`;
  return rows.map(toCheckpoint);
}

/** The checkpoints whose seal ranges meet event numbers [from, to], in order. */
export async function readCheckpointsMeeting(
  sql: Sql | TransactionSql,
  from: number,
  to: number,
): Promise<SignedCheckpoint[]> {
  const rows = await sql<CheckpointRow[]>`
    select ${sql.unsafe(CHECKPOINT_COLUMNS)} from public.audit_signed_checkpoints
    where last_seq >= ${from} and first_seq <= ${to} order by seal_no`;
  return rows.map(toCheckpoint);
}

/** What a seal gives its checkpoint. */
export type SealForCheckpoint = Pick<
  SignedCheckpoint,
  'sealNo' | 'sealedAt' | 'firstSeq' | 'lastSeq' | 'counts' | 'openRanges'
> & { pending: number[] | null; bodyFormat: BodyFormat | null };

/**
 * Signs the seal `seal` just written in `tx` and stores its checkpoint, chained to the newest one before
 * it. `events` are the sealed events in the seal's order, with their sealed bodies.
 */
export async function writeCheckpoint(
  tx: TransactionSql,
  seal: SealForCheckpoint,
  events: readonly { seq: number; body: string }[],
  signer: CheckpointSigner,
): Promise<SignedCheckpoint> {
  const [prev] = await tx<CheckpointRow[]>`
    select ${tx.unsafe(CHECKPOINT_COLUMNS)} from public.audit_signed_checkpoints
    where seal_no < ${seal.sealNo} order by seal_no desc limit 1`;
  const before = prev ? toCheckpoint(prev) : undefined;
  const body: Omit<SignedCheckpoint, 'signature'> = {
    // Named one by one: nothing of the seal's keyed part (its MAC, its digests) goes into a public record.
    sealNo: seal.sealNo,
    sealedAt: seal.sealedAt,
    firstSeq: seal.firstSeq,
    lastSeq: seal.lastSeq,
    counts: seal.counts,
    openRanges: seal.openRanges,
    pending: seal.pending ?? [],
    bodyFormat: seal.bodyFormat ?? 1,
    seqs: events.map((e) => e.seq),
    digests: Buffer.concat(events.map((e) => bodyDigest(e.body))),
    prevSealNo: before?.sealNo ?? null,
    prevHash: before ? checkpointHash(before) : GENESIS_HASH,
    keyId: signer.keyId,
  };
  const checkpoint = {
    ...body,
    signature: sign(null, checkpointBytes(body), signer.privateKey).toString('base64'),
  };
  await tx`
    insert into public.audit_signed_checkpoints (seal_no, sealed_at, first_seq, last_seq, seqs, digests, counts,
      open_ranges, pending, body_format, prev_seal_no, prev_hash, key_id, signature)
    values (${checkpoint.sealNo}, ${checkpoint.sealedAt}, ${checkpoint.firstSeq}, ${checkpoint.lastSeq},
      ${checkpoint.seqs.map(String)}::text[]::bigint[], ${checkpoint.digests}, ${tx.json(checkpoint.counts)},
      ${checkpoint.openRanges ? tx.json(checkpoint.openRanges) : null},
      ${checkpoint.pending.map(String)}::text[]::bigint[], ${checkpoint.bodyFormat}, ${checkpoint.prevSealNo},
      ${checkpoint.prevHash}, ${checkpoint.keyId}, ${checkpoint.signature})`;
  return checkpoint;
}
