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
 * the hash of the last removed event, from which `verify` continues.
 */
export async function pruneEvents(sql: Sql, before: Date, key: string): Promise<PruneResult[]> {
  return sql.begin(async (tx) => {
    await tx`set local bulkhead.audit_prune = 'on'`;
    const servers = await tx<
      { server: string }[]
    >`select distinct server from audit_events where at < ${before}`;
    const results: PruneResult[] = [];
    for (const { server } of servers) {
      await tx`select pg_advisory_xact_lock(hashtext(${'bulkhead_audit:' + server}))`;
      // The prefix ends at the first event at or after `before`; events are appended in time order per server.
      const [cut] = await tx<{ chainSeq: string; hash: string }[]>`
        select chain_seq as "chainSeq", hash from audit_events
        where server = ${server} and chain_seq < coalesce(
          (select min(chain_seq) from audit_events where server = ${server} and at >= ${before}),
          (select max(chain_seq) + 1 from audit_events where server = ${server}))
        order by chain_seq desc limit 1`;
      if (!cut) continue;
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
      results.push({ server, removed: deleted.count, checkpoint: chainSeq });
    }
    return results;
  });
}
