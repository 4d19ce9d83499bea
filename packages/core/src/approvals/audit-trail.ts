import type { AuditEventInput, Outcome } from '@bulkhead/audit';
import { createEventOwner, type EventDraft, type Party } from '../pipeline/observability/request-audit.ts';
import type { ApprovalRecord } from './store.ts';

/**
 * Audit events about an approval, each written in the same transaction as the
 * state change it records (so a request, a decision or an outcome exists
 * exactly when its event does):
 *
 * | method              | outcome                                   | written by (server)        | token fields      |
 * |---------------------|-------------------------------------------|----------------------------|-------------------|
 * | `tools/call`        | `pending_approval`                        | the owning server          | the requester     |
 * | `approvals/decide`  | `approved`, `rejected`, or `forbidden` (a refused decision) | `console` (console or CLI) | the decider |
 * | `approvals/expire`  | `expired`                                 | whoever finds it expired   | the requester     |
 * | `approvals/execute` | `executed`, or `tool_error` / `timeout` / `internal_error` / `forbidden` (refused) | the owning server | the requester |
 *
 * Each event carries `approval_id`. Only the console's role may write
 * `approvals/decide` events, and the database stamps every event with the
 * server of the role that wrote it.
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

/**
 * What every event about the approval `a` says, written by `server` and naming `by`: in the request
 * `requestId` (a console request that decides), else a request of its own.
 */
function approvalEvent(
  a: ApprovalRecord,
  server: string,
  by: Party,
  draft: Omit<EventDraft, 'tool' | 'arguments' | 'approvalId'>,
  requestId?: string,
): AuditEventInput {
  return createEventOwner({ server, by, requestId }).event({
    tool: a.tool,
    arguments: a.argumentsRedacted,
    approvalId: a.id,
    durationMs: 0,
    ...draft,
  });
}

/** The person who asked for `a`: the token its request came with. */
function requester(a: ApprovalRecord): Party {
  return { tokenId: a.requestedByTokenId, label: a.requestedByLabel };
}

/** The event of a decision (or of a decision refused), written by the console role. */
export function decisionEvent(
  a: ApprovalRecord,
  decider: { tokenId: string | null; label: string },
  outcome: 'approved' | 'rejected' | 'forbidden',
  extra: Record<string, unknown> = {},
  requestId?: string,
): AuditEventInput {
  return approvalEvent(
    a,
    'console',
    decider,
    {
      method: APPROVAL_METHODS.decide,
      outcome,
      resultSummary: {
        status: outcome,
        decided_by: decider.label,
        reason: a.decisionReason,
        arguments_hash: a.argumentsHash,
        ...extra,
      },
    },
    requestId,
  );
}

/** The event of a request that lapsed undecided. */
export function expiryEvent(a: ApprovalRecord, server: string, requestId?: string): AuditEventInput {
  return approvalEvent(
    a,
    server,
    requester(a),
    {
      method: APPROVAL_METHODS.expire,
      outcome: 'expired',
      resultSummary: { status: 'expired', expires_at: a.expiresAt.toISOString() },
    },
    requestId,
  );
}

/** The event of an approved action's run, written by the owning server with the outcome in one transaction. */
export function executionEvent(a: ApprovalRecord): AuditEventInput {
  return approvalEvent(a, a.server, requester(a), {
    method: APPROVAL_METHODS.execute,
    outcome: a.status === 'executed' ? 'executed' : FAILURE_OUTCOME[a.failure ?? 'internal_error']!,
    durationMs: a.durationMs ?? 0,
    resultSummary: {
      status: a.status,
      executed_by: a.executedBy,
      ...(a.status === 'executed' ? { result: summarise(a.result) } : { error: a.error }),
    },
  });
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
