import { randomUUID } from 'node:crypto';
import type { AuditEventInput, AuditWriter, Outcome } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { APPROVAL_COLUMNS, type ApprovalRecord } from './store.ts';

/**
 * Audit events about an approval go into the chain of the server that owns
 * the tool (`approval.server`), whoever writes them:
 *
 * | method              | outcome                                   | written by                | token fields      |
 * |---------------------|-------------------------------------------|---------------------------|-------------------|
 * | `tools/call`        | `pending_approval`                        | the call pipeline         | the requester     |
 * | `approvals/decide`  | `approved`, `rejected`                    | CLI or console            | the decider       |
 * | `approvals/expire`  | `expired`                                 | the owning server's sweep | the requester     |
 * | `approvals/execute` | `executed`, or `tool_error` / `timeout` / `internal_error` / `forbidden` (refused) | the owning server | the requester |
 *
 * Each event carries `approval_id`. The state change is committed first and
 * its event written right after, under the approval's row lock; the column
 * `audited_status` records that it was. Whoever finds an owed event (a
 * decider or executor that died in between) writes it, after checking the
 * log, so every event is written once.
 */
export const APPROVAL_METHODS = {
  decide: 'approvals/decide',
  expire: 'approvals/expire',
  execute: 'approvals/execute',
} as const;

const FAILURE_OUTCOME: Record<string, Outcome> = {
  tool_error: 'tool_error',
  timeout: 'timeout',
  internal_error: 'internal_error',
  refused: 'forbidden',
};

function owed(a: ApprovalRecord): { method: string; input: AuditEventInput }[] {
  const base = {
    server: a.server,
    tool: a.tool,
    arguments: a.argumentsRedacted,
    approvalId: a.id,
    requestId: randomUUID(),
  };
  const requester = { tokenId: a.requestedByTokenId, tokenLabel: a.requestedByLabel };
  const decision = (outcome: Outcome) => ({
    method: APPROVAL_METHODS.decide,
    input: {
      ...base,
      method: APPROVAL_METHODS.decide,
      outcome,
      tokenId: a.decidedByTokenId,
      tokenLabel: a.decidedBy,
      durationMs: 0,
      resultSummary: {
        status: a.status === 'rejected' ? 'rejected' : 'approved',
        decided_by: a.decidedBy,
        reason: a.decisionReason,
        arguments_hash: a.argumentsHash,
      },
    },
  });
  switch (a.status) {
    case 'approved':
      return [decision('approved')];
    case 'rejected':
      return [decision('rejected')];
    case 'expired':
      return [
        {
          method: APPROVAL_METHODS.expire,
          input: {
            ...base,
            ...requester,
            method: APPROVAL_METHODS.expire,
            outcome: 'expired',
            durationMs: 0,
            resultSummary: { status: 'expired', expires_at: a.expiresAt.toISOString() },
          },
        },
      ];
    case 'executed':
    case 'failed': {
      const execute = {
        method: APPROVAL_METHODS.execute,
        input: {
          ...base,
          ...requester,
          method: APPROVAL_METHODS.execute,
          outcome:
            a.status === 'executed' ? ('executed' as const) : FAILURE_OUTCOME[a.failure ?? 'internal_error']!,
          durationMs: a.durationMs ?? 0,
          resultSummary: {
            status: a.status,
            executed_by: a.executedBy,
            ...(a.status === 'executed' ? { result: summarise(a.result) } : { error: a.error }),
          },
        },
      };
      return a.auditedStatus === 'approved' ? [execute] : [decision('approved'), execute];
    }
    default:
      return [];
  }
}

function summarise(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (Array.isArray(v)) out[`${key}_count`] = v.length;
    else if (v === null || typeof v !== 'object')
      out[key] = typeof v === 'string' && v.length > 200 ? `${v.slice(0, 200)}…` : v;
  }
  return out;
}

/**
 * Writes the audit events the approval's current status still owes. With
 * `wait` the caller waits for the row lock (a decider or executor right after
 * its own change); without, a row locked by someone else is skipped (the sweep).
 * Returns the status now audited, or undefined when nothing was owed or the row was skipped.
 */
export async function auditApproval(
  sql: Sql,
  audit: AuditWriter,
  id: string,
  options: { wait: boolean },
): Promise<string | undefined> {
  return sql.begin(async (tx) => {
    const [a] = await tx<ApprovalRecord[]>`
      select ${tx.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals where id = ${id}
      for update ${options.wait ? tx`` : tx`skip locked`}`;
    if (!a || a.status === 'pending' || a.auditedStatus === a.status) return undefined;
    for (const event of owed(a)) {
      // Outcome distinguishes approved from rejected; the method alone tells execute and expire apart.
      const [written] = await sql`
        select 1 from audit_events
        where approval_id = ${a.id} and server = ${a.server} and method = ${event.method} limit 1`;
      if (!written) await audit.append(event.input);
    }
    await tx`update bulkhead_approvals set audited_status = status where id = ${a.id}`;
    return a.status;
  });
}

/** Ids of approvals whose status is ahead of the log, oldest first (for the sweep). */
export async function unauditedApprovals(sql: Sql, server: string, limit = 100): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from bulkhead_approvals
    where server = ${server} and status <> 'pending' and audited_status is distinct from status
    order by coalesce(executed_at, decided_at, expires_at) limit ${limit}`;
  return rows.map((r) => r.id);
}
