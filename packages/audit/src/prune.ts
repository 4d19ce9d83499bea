import type { Sql } from '@bulkhead/db';
import { signCheckpoint } from './verify.ts';

/** What {@link pruneEvents} removed, per server. */
export interface PruneResult {
  server: string;
  removed: number;
  checkpoint: number;
}

/**
 * Removes each server's events older than `before` — always a prefix of its
 * chain, so the rest stays a chain — and records a signed checkpoint holding
 * the hash of the last removed event, from which `verify` continues. Works in
 * batches of `batchSize` positions, each its own short transaction that moves
 * the checkpoint along, so writers of that server wait only for one batch and
 * other servers not at all.
 */
export async function pruneEvents(
  sql: Sql,
  before: Date,
  key: string,
  batchSize = 10_000,
): Promise<PruneResult[]> {
  const servers = await sql<
    { server: string }[]
  >`select distinct server from audit_events where at < ${before} order by server`;
  const results: PruneResult[] = [];
  for (const { server } of servers) {
    // The prefix ends before the first event at or after `before`; events are appended in time order per server.
    const [end] = await sql<{ last: string | null }[]>`
      select max(chain_seq) as last from audit_events
      where server = ${server} and chain_seq < coalesce(
        (select min(chain_seq) from audit_events where server = ${server} and at >= ${before}),
        (select max(chain_seq) + 1 from audit_events where server = ${server}))`;
    if (!end?.last) continue;
    const target = Number(end.last);
    let removed = 0;
    for (;;) {
      const batch = await sql.begin(async (tx) => {
        await tx`set local bulkhead.audit_prune = 'on'`;
        await tx`select pg_advisory_xact_lock(hashtext(${'bulkhead_audit:' + server}))`;
        const [cut] = await tx<{ chainSeq: string; hash: string }[]>`
          select chain_seq as "chainSeq", hash from audit_events
          where server = ${server} and chain_seq <= ${target}
            and chain_seq < (select min(chain_seq) from audit_events where server = ${server}) + ${batchSize}
          order by chain_seq desc limit 1`;
        if (!cut) return 0;
        const chainSeq = Number(cut.chainSeq);
        const deleted =
          await tx`delete from audit_events where server = ${server} and chain_seq <= ${chainSeq}`;
        const signature = signCheckpoint(key, { server, chainSeq, hash: cut.hash });
        await tx`
          insert into audit_checkpoints (server, chain_seq, hash, pruned_before, removed, signature)
          values (${server}, ${chainSeq}, ${cut.hash}, ${before}, ${deleted.count}, ${signature})
          on conflict (server) do update set chain_seq = excluded.chain_seq, hash = excluded.hash,
            pruned_before = excluded.pruned_before, removed = audit_checkpoints.removed + excluded.removed,
            signature = excluded.signature, created_at = now()`;
        return deleted.count;
      });
      removed += batch;
      if (batch === 0) break;
    }
    if (removed) results.push({ server, removed, checkpoint: target });
  }
  return results;
}
