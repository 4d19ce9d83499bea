import type { Sql } from '@bulkhead/db';
import { same } from './hash.ts';
import { readCheckpoint, SEAL_COLUMNS, sealHead, sealMac, toSeal, type Seal } from './seal.ts';
import { BODY_FORMAT, eventDigest, readBodiesIn } from './sealed-body.ts';

/** postgres.js's transaction type. */
type TransactionSql = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * What the key says of a sealed event: its digest and its seal's MAC hold (`verified`), the event differs
 * from what was sealed (`event_changed`), the seal record does not match its MAC (`seal_changed`: changed,
 * or sealed with another key), or nothing, for want of the key (`no_key`).
 */
export type SealCheck = 'verified' | 'event_changed' | 'seal_changed' | 'no_key';

/** Where one event stands in the sealed log. */
export type EventSealStatus =
  /** Sealed by seal `sealNo`, checked with the key as far as it was given. */
  | { state: 'sealed'; sealNo: number; sealedAt: Date; check: SealCheck }
  /**
   * After the newest seal, or in a range a seal left open for a writer that has not ended yet. (After a
   * deleted tail of seals too: only the count of seals made and `audit verify --anchor` tell that.)
   */
  | { state: 'unsealed' }
  /** Inside the range of seal `sealNo`, but sealed by no seal: inserted afterwards. */
  | { state: 'inserted_afterwards'; sealNo: number }
  /** Numbered where the sealed log begins or before (the range `audit prune` removed), yet present: inserted afterwards. */
  | { state: 'in_pruned_range' }
  /** Numbered within the sealed log where no seal is: the seal of its range was deleted. */
  | { state: 'seal_missing' };

type SealRow = Parameters<typeof toSeal>[0];

/** The seal whose range holds `seq`. */
async function rangeSeal(tx: TransactionSql, seq: number): Promise<Seal | undefined> {
  const [row] = await tx<SealRow[]>`
    select ${tx.unsafe(SEAL_COLUMNS)} from audit_seals where first_seq <= ${seq} and last_seq >= ${seq}
    order by seal_no limit 1`;
  return row ? toSeal(row) : undefined;
}

/** The seal after `sealNo` that lists `seq`: the one that closed the range `sealNo` left open. */
async function closingSeal(tx: TransactionSql, sealNo: number, seq: number): Promise<Seal | undefined> {
  const [row] = await tx<SealRow[]>`
    select ${tx.unsafe(SEAL_COLUMNS)} from audit_seals where seal_no > ${sealNo} and ${seq} = any (seqs)
    order by seal_no limit 1`;
  return row ? toSeal(row) : undefined;
}

/** The seal that sealed event `seq`, or why none did. */
async function sealOf(
  tx: TransactionSql,
  seq: number,
): Promise<Seal | Exclude<EventSealStatus, { state: 'sealed' }>> {
  const range = await rangeSeal(tx, seq);
  if (!range) {
    if (seq <= ((await readCheckpoint(tx))?.lastSeq ?? 0)) return { state: 'in_pruned_range' };
    return seq <= (await sealHead(tx)).lastSeq ? { state: 'seal_missing' } : { state: 'unsealed' };
  }
  if (range.seqs.includes(seq)) return range;
  if (!(range.openRanges ?? []).some(([from, to]) => seq >= from && seq <= to))
    return { state: 'inserted_afterwards', sealNo: range.sealNo };
  // Its writer was still running when the range was sealed: the seal that closes the range lists it.
  const closing = await closingSeal(tx, range.sealNo, seq);
  if (closing) return closing;
  return (await sealHead(tx)).pending.includes(range.sealNo)
    ? { state: 'unsealed' }
    : { state: 'inserted_afterwards', sealNo: range.sealNo };
}

/**
 * Where event `seq` stands in the sealed log, and with `key` whether it still is what was sealed: its
 * digest recomputed over the sealed body exactly as the sealer made it, and found in its seal, whose MAC
 * is checked too. One event and its seal only: the chain of seals and what only the whole log shows are
 * `verifyLog`'s. Undefined when there is no such event (or the transaction may not see it).
 */
export async function eventSealStatus(
  tx: TransactionSql,
  key: string | undefined,
  seq: number,
): Promise<EventSealStatus | undefined> {
  const [event] = await readBodiesIn(tx, [[seq, seq]]);
  if (!event) return undefined;
  const seal = await sealOf(tx, seq);
  if ('state' in seal) return seal;
  const sealed = { state: 'sealed', sealNo: seal.sealNo, sealedAt: seal.sealedAt } as const;
  if (key === undefined) return { ...sealed, check: 'no_key' };
  const { mac, ...body } = seal;
  if (!same(mac, sealMac(key, body))) return { ...sealed, check: 'seal_changed' };
  const i = seal.seqs.indexOf(seq);
  const digest = seal.digests.subarray(i * 8, i * 8 + 8);
  // The body as its seal made it: a seal made before 0048 rendered every column in full.
  const format = seal.bodyFormat ?? 1;
  const text = format === BODY_FORMAT ? event.body : (await readBodiesIn(tx, [[seq, seq]], format))[0]!.body;
  return { ...sealed, check: eventDigest(key, text).equals(digest) ? 'verified' : 'event_changed' };
}
