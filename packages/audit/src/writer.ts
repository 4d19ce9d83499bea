import { randomUUID } from 'node:crypto';
import type { Sql } from '@bulkhead/db';
import type { AuditEvent, AuditEventInput } from './events.ts';
import { GENESIS, eventHash } from './hash.ts';

/** Writes audit events. `append` resolves once the event is committed. */
export interface AuditWriter {
  append(input: AuditEventInput): Promise<AuditEvent>;
  /** Resolves when the log can take an event now (database reachable, insert allowed); rejects otherwise. */
  check(): Promise<void>;
}

/**
 * The chain is one chain per server. Writers of the same server, in any
 * process or replica, serialise on a transaction-scoped advisory lock keyed by
 * the server name, read the head of the chain and append after it; writers of
 * different servers never wait on each other.
 */
export function createAuditWriter(sql: Sql): AuditWriter {
  return {
    async append(input) {
      return sql.begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(hashtext(${'bulkhead_audit:' + input.server}))`;
        const [head] = await tx<{ chainSeq: string; hash: string }[]>`
          select chain_seq as "chainSeq", hash from audit_events
          where server = ${input.server} order by chain_seq desc limit 1`;
        const [checkpoint] = head
          ? []
          : await tx<{ chainSeq: string; hash: string }[]>`
              select chain_seq as "chainSeq", hash from audit_checkpoints where server = ${input.server}`;
        const previous = head ?? checkpoint;
        const event: Omit<AuditEvent, 'seq' | 'hash'> = {
          id: randomUUID(),
          at: new Date(),
          server: input.server,
          chainSeq: previous ? Number(previous.chainSeq) + 1 : 1,
          tokenId: input.tokenId ?? null,
          tokenLabel: input.tokenLabel ?? null,
          clientName: input.clientName ?? null,
          clientVersion: input.clientVersion ?? null,
          method: input.method,
          tool: input.tool ?? null,
          arguments: normalise(input.arguments),
          outcome: input.outcome,
          resultSummary: normalise(input.resultSummary),
          durationMs: Math.max(0, Math.round(input.durationMs)),
          requestId: input.requestId,
          approvalId: input.approvalId ?? null,
          injectionSuspected: input.injectionSuspected ?? false,
          prevHash: previous?.hash ?? GENESIS,
        };
        const hash = eventHash(event);
        const [row] = await tx<{ seq: string }[]>`
          insert into audit_events (id, at, server, chain_seq, token_id, token_label, client_name, client_version,
            method, tool, arguments, outcome, result_summary, duration_ms, request_id, approval_id,
            injection_suspected, prev_hash, hash)
          values (${event.id}, ${event.at}, ${event.server}, ${event.chainSeq}, ${event.tokenId}, ${event.tokenLabel},
            ${event.clientName}, ${event.clientVersion}, ${event.method}, ${event.tool},
            ${event.arguments === null ? null : tx.json(event.arguments as never)}, ${event.outcome},
            ${event.resultSummary === null ? null : tx.json(event.resultSummary as never)}, ${event.durationMs},
            ${event.requestId}, ${event.approvalId}, ${event.injectionSuspected}, ${event.prevHash}, ${hash})
          returning seq`;
        return { ...event, seq: Number(row!.seq), hash };
      });
    },
    async check() {
      const [row] = await sql<{ ok: boolean }[]>`
        select has_table_privilege(current_user, 'audit_events', 'INSERT') as ok`;
      if (!row?.ok) throw new Error('the audit log refuses inserts from this role');
    },
  };
}

/**
 * Stores what jsonb would give back, so that the hash computed now equals the
 * hash recomputed from the row later — and so that no argument can make the
 * insert fail (a call whose event cannot be written must not have run): jsonb
 * drops undefined, refuses NUL characters and lone surrogates (in values and
 * keys), and stores dates as strings.
 */
function normalise(value: unknown): unknown {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value), (_key, v: unknown) => {
    if (typeof v === 'string') return clean(v);
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.some(([k]) => clean(k) !== k))
        return Object.fromEntries(entries.map(([k, x]) => [clean(k), x]));
    }
    return v;
  });
}

function clean(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\uFFFD');
}
