// Seals may leave ranges open for writers still running; a later seal (or its signed checkpoint) closes
// them. Both walks of the log, with the audit key (verify.ts) and with the public key alone
// (checkpoint-walk.ts), name an event that arrived in a closed range without being accounted for.
import type { LogBreak } from './verify.ts';

/** What a walk keeps of ranges left open for running writers: the seals that left them, and what arrived in them. */
export interface OpenRanges {
  pending: number[];
  arrived: Map<number, { sealNo: number; server: string; at: Date }>;
}

/**
 * Closes the ranges left open by the seals in `walk.pending` that are not in `stillPending`: an event
 * that arrived in one of them and is still unaccounted for was inserted afterwards (`closer` says what
 * closed the range without it). Returns the seals closed; `walk.pending` becomes `stillPending`.
 */
export function closeRanges(
  walk: OpenRanges,
  stillPending: readonly number[],
  closer: string,
  fail: (b: LogBreak) => void,
): number[] {
  const closed = walk.pending.filter((n) => !stillPending.includes(n));
  for (const [seq, e] of walk.arrived)
    if (closed.includes(e.sealNo)) {
      walk.arrived.delete(seq);
      fail({
        kind: 'event_unsealed',
        sealNo: e.sealNo,
        seq,
        server: e.server,
        reason: `event ${seq} (${e.server}, ${e.at.toISOString()}) lies in a range seal ${e.sealNo} left open, but ${closer}: inserted afterwards`,
      });
    }
  walk.pending = [...stillPending];
  return closed;
}
