import type { AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { auditApproval } from './audit-trail.ts';
import { APPROVAL_COLUMNS, APPROVAL_ID, argumentsHash, getApproval, type ApprovalRecord } from './store.ts';

/** A decision that cannot be taken; the message says why and what to do, for a person. */
export class ApprovalDecisionError extends Error {
  override readonly name = 'ApprovalDecisionError';
  constructor(
    message: string,
    readonly code: 'unknown' | 'decided' | 'expired' | 'reason_required' | 'changed' | 'invalid',
  ) {
    super(message);
  }
}

/** A person's decision on one approval. */
export interface Decision {
  id: string;
  decision: 'approve' | 'reject';
  /** Optional when approving, required when rejecting. */
  reason?: string | undefined;
  /** Who decided, as recorded: `cli:ana`, or the approver token's label in the console. */
  decidedBy: string;
  /** The approver token used (console); null from the CLI. */
  decidedByTokenId?: string | null;
  /** The arguments hash the decider was shown; refused when the stored one differs. */
  expectedHash?: string | undefined;
}

const MAX_REASON = 1000;

function stamp(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * Records a decision on a pending approval and writes its audit event into
 * the owning server's chain. The owning server hears of an approval through
 * NOTIFY and runs it within a second. Refuses, with a sentence for a person:
 * unknown ids, decided or expired approvals (by the database's clock), a
 * rejection without reason, approving arguments that no longer match their
 * stored hash, and arguments that changed since the decider saw them.
 */
export async function decideApproval(sql: Sql, audit: AuditWriter, d: Decision): Promise<ApprovalRecord> {
  const reason = d.reason?.trim() || null;
  if (!APPROVAL_ID.test(d.id))
    throw new ApprovalDecisionError(
      `"${d.id}" is not an approval id (ap_ and 12 letters or digits)`,
      'invalid',
    );
  if (d.decision === 'reject' && !reason)
    throw new ApprovalDecisionError(
      'a reason is required to reject: say why, the requester will see it',
      'reason_required',
    );
  if (reason && reason.length > MAX_REASON)
    throw new ApprovalDecisionError(`the reason is limited to ${MAX_REASON} characters`, 'invalid');
  const outcome = await sql.begin(async (tx) => {
    const [a] = await tx<ApprovalRecord[]>`
      select ${tx.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals where id = ${d.id} for update`;
    if (!a) return { error: new ApprovalDecisionError(`approval ${d.id} does not exist`, 'unknown') };
    if (a.status !== 'pending') {
      const by = a.decidedBy ? ` by ${a.decidedBy} on ${stamp(a.decidedAt!)}` : '';
      return {
        error: new ApprovalDecisionError(
          a.status === 'expired'
            ? `approval ${d.id} expired undecided on ${stamp(a.expiresAt)}; it will never run`
            : `approval ${d.id} was already decided (${a.status}${by})`,
          a.status === 'expired' ? 'expired' : 'decided',
        ),
      };
    }
    // Arguments changed in storage after the request are never approved (the executor would refuse them
    // later anyway); the request can still be rejected.
    if (d.decision === 'approve' && argumentsHash(a.arguments) !== a.argumentsHash)
      return {
        error: new ApprovalDecisionError(
          `approval ${d.id}: the stored arguments changed since the request — refused; reject it and ask for a new request`,
          'changed',
        ),
      };
    if (d.expectedHash && d.expectedHash !== a.argumentsHash)
      return {
        error: new ApprovalDecisionError(
          `approval ${d.id} no longer has the arguments you were shown; review it again`,
          'changed',
        ),
      };
    // The database's clock decides expiry, not the decider's: the update only takes a request not yet expired.
    const decided = await tx`
      update bulkhead_approvals set status = ${d.decision === 'approve' ? 'approved' : 'rejected'},
        decided_at = now(), decided_by = ${d.decidedBy}, decided_by_token_id = ${d.decidedByTokenId ?? null},
        decision_reason = ${reason}
      where id = ${a.id} and status = 'pending' and expires_at > now()`;
    if (decided.count === 0) {
      await tx`update bulkhead_approvals set status = 'expired' where id = ${a.id} and status = 'pending'`;
      return {
        expired: true as const,
        error: new ApprovalDecisionError(
          `approval ${d.id} expired undecided on ${stamp(a.expiresAt)}; it will never run`,
          'expired',
        ),
      };
    }
    return { error: null };
  });
  if (outcome.error && !('expired' in outcome)) throw outcome.error;
  await auditApproval(sql, audit, d.id, { wait: true });
  if (outcome.error) throw outcome.error;
  return (await getApproval(sql, d.id))!;
}

/** Marks `server`'s pending approvals past their expiry as expired; returns their ids (their events are owed). */
export async function expireOverdue(sql: Sql, server: string): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    update bulkhead_approvals set status = 'expired'
    where server = ${server} and status = 'pending' and expires_at <= now()
    returning id`;
  return rows.map((r) => r.id);
}
