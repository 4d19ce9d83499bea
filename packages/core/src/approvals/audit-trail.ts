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
  approval: ApprovalRecord,
  server: string,
  by: Party,
  draft: Omit<EventDraft, 'tool' | 'arguments' | 'approvalId'>,
  requestId?: string,
): AuditEventInput {
  return createEventOwner({ server, by, requestId }).event({
    tool: approval.tool,
    arguments: approval.argumentsRedacted,
    approvalId: approval.id,
    durationMs: 0,
    ...draft,
  });
}

/** The person who asked for `approval`: the token its request came with. */
function requester(approval: ApprovalRecord): Party {
  return { tokenId: approval.requestedByTokenId, label: approval.requestedByLabel };
}

/** The event of a decision (or of a decision refused), written by the console role. */
export function decisionEvent(
  approval: ApprovalRecord,
  decider: { tokenId: string | null; label: string },
  outcome: 'approved' | 'rejected' | 'forbidden',
  extra: Record<string, unknown> = {},
  requestId?: string,
): AuditEventInput {
  return approvalEvent(
    approval,
    'console',
    decider,
    {
      method: APPROVAL_METHODS.decide,
      outcome,
      resultSummary: {
        status: outcome,
        decided_by: decider.label,
        reason: approval.decisionReason,
        arguments_hash: approval.argumentsHash,
        ...extra,
      },
    },
    requestId,
  );
}

/** The event of a request that lapsed undecided. */
export function expiryEvent(approval: ApprovalRecord, server: string, requestId?: string): AuditEventInput {
  return approvalEvent(
    approval,
    server,
    requester(approval),
    {
      method: APPROVAL_METHODS.expire,
      outcome: 'expired',
      resultSummary: { status: 'expired', expires_at: approval.expiresAt.toISOString() },
    },
    requestId,
  );
}

/** The event of an approved action's run, written by the owning server with the outcome in one transaction. */
export function executionEvent(approval: ApprovalRecord): AuditEventInput {
  return approvalEvent(approval, approval.server, requester(approval), {
    method: APPROVAL_METHODS.execute,
    outcome:
      approval.status === 'executed' ? 'executed' : FAILURE_OUTCOME[approval.failure ?? 'internal_error']!,
    durationMs: approval.durationMs ?? 0,
    resultSummary: {
      status: approval.status,
      executed_by: approval.executedBy,
      ...(approval.status === 'executed'
        ? { result: summarise(approval.result) }
        : { error: approval.error }),
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
