import { randomUUID } from 'node:crypto';
import type { AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { decisionEvent, expiryEvent } from './audit-trail.ts';
import { APPROVAL_COLUMNS, APPROVAL_ID, argumentsHash, getApproval, type ApprovalRecord } from './store.ts';

/** A decision that cannot be taken; the message says why and what to do, for a person. */
export class ApprovalDecisionError extends Error {
  override readonly name = 'ApprovalDecisionError';
  constructor(
    message: string,
    readonly code:
      | 'unknown'
      | 'decided'
      | 'expired'
      | 'withdrawn'
      | 'reason_required'
      | 'changed'
      | 'invalid'
      | 'self_approval'
      | 'unauthorized'
      | 'forbidden',
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
  /**
   * The approver's proof: their approver token in full, or their console session's cookie value. The
   * database derives who decides (token id, label, person) from it and records them as the decider.
   */
  proof: string;
  /** Where the decision was taken, recorded before the approver's label (`console`, `cli`). */
  via: 'console' | 'cli';
  /** The arguments hash the decider was shown; refused when the stored one differs. */
  expectedHash?: string | undefined;
  /**
   * `BULKHEAD_ALLOW_SELF_APPROVAL` given to the schema's owner (the CLI, with `asRole`): a one-person shop
   * may approve what its own token asked for. Without `asRole` only the owner's switch in the database
   * (`bulkhead_settings`, set by `bulkhead start`) allows it; no login can flip it from its session.
   */
  allowSelfApproval?: boolean;
  /** Decide under this role (`SET LOCAL ROLE`): the CLI, connected as the owner, decides as `bulkhead_console`. */
  asRole?: string;
  /** The request the decision is taken in (the console's), whose id its event carries; a fresh id when absent. */
  requestId?: string | undefined;
}

const MAX_REASON = 1000;

function stamp(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

type Verdict = { error: ApprovalDecisionError | null; record?: ApprovalRecord };

type Tx = Parameters<Parameters<Sql['begin']>[1]>[0];

/**
 * Who decides is what the decision's proof proves, recorded for the transaction
 * (`bulkhead_console_prove`): the approvals guard accepts a decision only under that approver. Only the
 * owner (the CLI, deciding under `asRole`) may allow self-approval for its own transaction.
 */
async function proveApprover(
  tx: Tx,
  decision: Decision,
): Promise<{ approver: { tokenId: string; label: string; owner: string | null }; allowSelf: boolean }> {
  const [me] = await tx<{ tokenId: string; label: string; owner: string | null; selfApproval: boolean }[]>`
    select token_id as "tokenId", label, owner, self_approval as "selfApproval"
    from bulkhead_console_prove(${decision.proof})`.catch((err: unknown) => {
    if ((err as { code?: string }).code !== '42501') throw err;
    throw new ApprovalDecisionError(
      'your approver token or console session is unknown, expired or revoked: sign in again',
      'unauthorized',
    );
  });
  const owned = Boolean(decision.asRole && decision.allowSelfApproval);
  if (owned)
    await tx`update bulkhead_console_proofs set self_approval = true where xact = pg_current_xact_id()`;
  return {
    approver: { tokenId: me!.tokenId, label: me!.label, owner: me!.owner },
    allowSelf: me!.selfApproval || owned,
  };
}

/**
 * Records a decision on a pending approval, with its audit event in the same
 * transaction. Only the console's database role can write a decision (the
 * database refuses it from any server role), so this runs under that role:
 * the console's own connection, or the CLI's under `SET ROLE bulkhead_console`.
 * The owning server hears of an approval through NOTIFY and runs it within a
 * second. Refuses, with a sentence for a person: unknown ids, decided,
 * withdrawn or expired approvals (by the database's clock), a rejection without reason,
 * approving arguments that no longer match their stored hash or that changed
 * since the decider saw them, and — separation of duties — approving a
 * request filed with a token issued to the approver's own person (refused and
 * audited, unless the owner's switch allows it). The decider is whoever `proof` proves.
 */
export async function decideApproval(
  sql: Sql,
  audit: AuditWriter,
  decision: Decision,
): Promise<ApprovalRecord> {
  const reason = checkedReason(decision);
  const verdict = await sql.begin(async (tx): Promise<Verdict> => {
    const { approver, allowSelf } = await proveApprover(tx, decision);
    const decidedBy = `${decision.via}:${approver.label}`;
    const decider = { tokenId: approver.tokenId, label: decidedBy };
    if (decision.asRole) await tx`set local role ${tx(decision.asRole)}`;
    const [approval] = await tx<ApprovalRecord[]>`
      select ${tx.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals where id = ${decision.id} for update`;
    if (!approval)
      return { error: new ApprovalDecisionError(`approval ${decision.id} does not exist`, 'unknown') };
    const closed = notPending(approval);
    if (closed) return { error: closed };
    const [clock] = await tx<{ expired: boolean }[]>`select ${approval.expiresAt} <= now() as expired`;
    if (clock!.expired) {
      // The database's clock decides expiry, not the decider's.
      const [expired] = await tx<ApprovalRecord[]>`
        update bulkhead_approvals set status = 'expired' where id = ${approval.id}
        returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
      await audit.appendIn(tx, expiryEvent(expired!, 'console', decision.requestId));
      return {
        error: new ApprovalDecisionError(
          `approval ${decision.id} expired undecided on ${stamp(approval.expiresAt)}; it will never run`,
          'expired',
        ),
      };
    }
    const refused = await withoutRight(tx, audit, approval, decider, decision);
    if (refused) return { error: refused };
    if (decision.decision === 'approve' && !allowSelf && approval.requestedByTokenId) {
      // The database's answer, the one the approvals guard gives too: persons by id where both sides are
      // persons, else names as the database compares them.
      const [requester] = await tx<{ same: boolean; owner: string | null }[]>`
        select bulkhead_proven_is_requester(${approval.requestedByTokenId}) as same,
          bulkhead_token_owner(${approval.requestedByTokenId}) as owner`;
      if (requester!.same) {
        const person = approver.owner ?? requester!.owner ?? approver.label;
        const error = new ApprovalDecisionError(
          `approval ${decision.id} was requested with a token issued to ${person}, who may not approve it too: another approver must decide (separation of duties)`,
          'self_approval',
        );
        await audit.appendIn(
          tx,
          decisionEvent(
            approval,
            decider,
            'forbidden',
            { reason: 'self_approval', person },
            decision.requestId,
          ),
        );
        return { error };
      }
    }
    const changed = changedArguments(approval, decision);
    if (changed) return { error: changed };
    if (decision.decision === 'approve') {
      const unasked = await notAskedOf(tx, audit, approval, decider, decision);
      if (unasked) return { error: unasked };
    }
    const status = decision.decision === 'approve' ? 'approved' : 'rejected';
    // The event first: the database accepts a decision only with its event written before it in the same
    // transaction (the approvals guard looks it up by id), so a decision never exists unrecorded.
    const event = {
      ...decisionEvent(
        { ...approval, decisionReason: reason },
        decider,
        status,
        allowSelf ? { self_approval_allowed: true } : {},
        decision.requestId,
      ),
      id: randomUUID(),
    };
    await audit.appendIn(tx, event);
    const [decided] = await tx<ApprovalRecord[]>`
      update bulkhead_approvals set status = ${status},
        decided_by = ${decidedBy}, decided_by_token_id = ${approver.tokenId}, decision_reason = ${reason},
        decided_arguments_hash = ${decision.decision === 'approve' ? approval.argumentsHash : null},
        decision_event_id = ${event.id}
      where id = ${approval.id}
      returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
    return { error: null, record: decided! };
  });
  if (verdict.error) throw verdict.error;
  return verdict.record ?? (await getApproval(sql, decision.id))!;
}

/**
 * Why the proven approver may not decide this server's requests, audited; null when they may. A person
 * decides only a server one of their groups is mapped to approve, as the database reads it now (the
 * approvals guard asks the same function); an approver token issued by hand decides every server.
 */
async function withoutRight(
  tx: Tx,
  audit: AuditWriter,
  approval: ApprovalRecord,
  decider: { tokenId: string; label: string },
  decision: Decision,
): Promise<ApprovalDecisionError | null> {
  const [may] = await tx<{ ok: boolean }[]>`select bulkhead_console_may_decide(${approval.server}) as ok`;
  if (may!.ok) return null;
  const [person] = await tx<{ groups: string[] }[]>`select groups from bulkhead_console_proven_person()`;
  const groups = person?.groups.length ? ` (${person.groups.join(', ')})` : '';
  await audit.appendIn(
    tx,
    decisionEvent(
      approval,
      decider,
      'forbidden',
      { reason: 'no_right', server: approval.server, groups: person?.groups ?? null },
      decision.requestId,
    ),
  );
  return new ApprovalDecisionError(
    `you may not decide requests of ${approval.server}: none of your groups${groups} is mapped to approve ${approval.server} (an operator maps one with \`bulkhead groups add <group> --approve ${approval.server}\`)`,
    'forbidden',
  );
}

/**
 * Why the company's policy does not count the proven approver's approval of this request, audited;
 * null when it does: they are in none of the groups it names, or they approved it already and it
 * waits for another person (a request that needs more than one). The approvals guard checks the same.
 */
async function notAskedOf(
  tx: Tx,
  audit: AuditWriter,
  approval: ApprovalRecord,
  decider: { tokenId: string; label: string },
  decision: Decision,
): Promise<ApprovalDecisionError | null> {
  if (!approval.approverGroups.length && approval.requiredApprovals <= 1) return null;
  const [voter] = await tx<{ person: string; groups: string[] }[]>`
    select person, groups from bulkhead_console_proven_voter()`;
  const groups = voter?.groups ?? [];
  if (approval.approverGroups.length && !approval.approverGroups.some((g) => groups.includes(g))) {
    await audit.appendIn(
      tx,
      decisionEvent(
        approval,
        decider,
        'forbidden',
        { reason: 'not_in_groups', groups: approval.approverGroups, policy: approval.policyIds },
        decision.requestId,
      ),
    );
    return new ApprovalDecisionError(
      `the company's policy asks for approval of ${approval.id} by someone from ${approval.approverGroups.join(' or ')}, and you are in none of those groups`,
      'forbidden',
    );
  }
  if (approval.requiredApprovals > 1) {
    const votes = await tx<
      { person: string }[]
    >`select person from bulkhead_approval_votes_of(${approval.id})`;
    if (voter && votes.some((v) => v.person === voter.person)) {
      await audit.appendIn(
        tx,
        decisionEvent(
          approval,
          decider,
          'forbidden',
          { reason: 'approved_already', required: approval.requiredApprovals, policy: approval.policyIds },
          decision.requestId,
        ),
      );
      return new ApprovalDecisionError(
        `you have already approved ${approval.id}; the company's policy asks ${approval.requiredApprovals} different people to approve it, so another person must`,
        'decided',
      );
    }
  }
  return null;
}

/** The decision's reason, trimmed (null for none), once what needs no database is checked: the id and the reason. */
function checkedReason(decision: Decision): string | null {
  const reason = decision.reason?.trim() || null;
  if (!APPROVAL_ID.test(decision.id))
    throw new ApprovalDecisionError(
      `"${decision.id}" is not an approval id (ap_ and 12 letters or digits)`,
      'invalid',
    );
  if (decision.decision === 'reject' && !reason)
    throw new ApprovalDecisionError(
      'a reason is required to reject: say why, the requester will see it',
      'reason_required',
    );
  if (reason && reason.length > MAX_REASON)
    throw new ApprovalDecisionError(`the reason is limited to ${MAX_REASON} characters`, 'invalid');
  return reason;
}

/** Why an approval that is no longer pending (withdrawn, decided, expired as stored) cannot be decided; null while pending. */
function notPending(approval: ApprovalRecord): ApprovalDecisionError | null {
  if (approval.status === 'withdrawn')
    return new ApprovalDecisionError(
      `approval ${approval.id} was withdrawn by its requester (${approval.requestedByLabel ?? 'unknown'}) on ${stamp(approval.withdrawnAt!)} before anyone decided; it will never run`,
      'withdrawn',
    );
  if (approval.status === 'pending') return null;
  const by = approval.decidedBy ? ` by ${approval.decidedBy} on ${stamp(approval.decidedAt!)}` : '';
  return new ApprovalDecisionError(
    approval.status === 'expired'
      ? `approval ${approval.id} expired undecided on ${stamp(approval.expiresAt)}; it will never run`
      : `approval ${approval.id} was already decided (${approval.status}${by})`,
    approval.status === 'expired' ? 'expired' : 'decided',
  );
}

/**
 * Why the arguments may not be decided on as they are: changed in storage after the request (never
 * approved; the executor would refuse them later anyway, but the request can still be rejected), or
 * not those the decider was shown. Null when they are.
 */
function changedArguments(approval: ApprovalRecord, decision: Decision): ApprovalDecisionError | null {
  if (decision.decision === 'approve' && argumentsHash(approval.arguments) !== approval.argumentsHash)
    return new ApprovalDecisionError(
      `approval ${decision.id}: the stored arguments changed since the request — refused; reject it and ask for a new request`,
      'changed',
    );
  if (decision.expectedHash && decision.expectedHash !== approval.argumentsHash)
    return new ApprovalDecisionError(
      `approval ${decision.id} no longer has the arguments you were shown; review it again`,
      'changed',
    );
  return null;
}

/**
 * Marks `server`'s pending approvals past their expiry as expired, each with its event in the same
 * transaction; returns their ids.
 */
export async function expireOverdue(sql: Sql, audit: AuditWriter, server: string): Promise<string[]> {
  return sql.begin(async (tx) => {
    const rows = await tx<ApprovalRecord[]>`
      update bulkhead_approvals set status = 'expired'
      where server = ${server} and status = 'pending' and expires_at <= now()
      returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
    for (const a of rows) await audit.appendIn(tx, expiryEvent(a, server));
    return rows.map((r) => r.id);
  });
}
