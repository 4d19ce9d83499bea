import type { Sql } from '@bulkhead/db';
import { readCheckpoint, SEAL_COLUMNS, signCheckpoint, toSeal } from './seal.ts';

/** What {@link pruneLog} removed. */
export interface PruneResult {
  removedEvents: number;
  removedSeals: number;
  /** The seal the log now continues from (the prune checkpoint), or null when nothing was old enough. */
  checkpointSeal: number | null;
}

/**
 * Removes whole seals sealed before `before`, with their events — always the oldest part of the sealed
 * log, never an unsealed event, never past a seal whose open ranges wait for a writer — and records a checkpoint signed with the key: the last removed seal's
 * number, MAC and running totals, from which `verify` continues. Works a few seals per transaction, each
 * moving the checkpoint along, so that writers never wait on it (they take no lock it holds).
 */
export async function pruneLog(
  sql: Sql,
  before: Date,
  key: string,
  sealsPerBatch = 20,
): Promise<PruneResult> {
  const result: PruneResult = { removedEvents: 0, removedSeals: 0, checkpointSeal: null };
  for (;;) {
    const done = await sql.begin(async (tx) => {
      await tx`set local bulkhead.audit_prune = 'on'`;
      const rows = await tx<Parameters<typeof toSeal>[0][]>`
        select ${tx.unsafe(SEAL_COLUMNS)} from audit_seals
        where sealed_at < ${before} order by seal_no limit ${sealsPerBatch}`;
      // Only at a seal with nothing pending: events of open ranges not sealed yet must stay.
      const seals = rows.map(toSeal);
      let last = seals.length - 1;
      while (last >= 0 && seals[last]!.pending?.length) last--;
      if (last < 0) return true;
      const cut = seals[last]!;
      const deleted = await tx`delete from audit_events where seq <= ${cut.lastSeq}`;
      await tx`delete from audit_seals where seal_no <= ${cut.sealNo}`;
      // Their signed checkpoints go with them: what remains starts at the prune checkpoint.
      await tx`delete from audit_signed_checkpoints where seal_no <= ${cut.sealNo}`;
      await tx`delete from audit_checkpoint_timestamps where seal_no <= ${cut.sealNo}`;
      const previous = await readCheckpoint(tx);
      const removed = (previous?.removed ?? 0) + deleted.count;
      const checkpoint = { sealNo: cut.sealNo, lastSeq: cut.lastSeq, mac: cut.mac, totals: cut.totals };
      await tx`
        insert into audit_prune_checkpoint (id, seal_no, last_seq, mac, totals, pruned_before, removed, signature)
        values (true, ${cut.sealNo}, ${cut.lastSeq}, ${cut.mac}, ${tx.json(cut.totals)}, ${before}, ${removed},
          ${signCheckpoint(key, checkpoint)})
        on conflict (id) do update set seal_no = excluded.seal_no, last_seq = excluded.last_seq, mac = excluded.mac,
          totals = excluded.totals, pruned_before = excluded.pruned_before, removed = excluded.removed,
          signature = excluded.signature, created_at = now()`;
      result.removedEvents += deleted.count;
      result.removedSeals += last + 1;
      result.checkpointSeal = cut.sealNo;
      return rows.length < sealsPerBatch || last < seals.length - 1;
    });
    if (done) return result;
  }
}
