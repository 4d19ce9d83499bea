import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { ApprovalRequester } from '../pipeline/call/call-tool.ts';
import { hasGatedTools, type ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { redactArguments } from '../pipeline/text-safety/secret.ts';
import { untrusted } from '../pipeline/text-safety/untrusted/wrap.ts';
import {
  pendingNote,
  previewSource,
  RUNS_BY_POLICY_NOTE,
  type PendingApprovalResult,
} from '../pipeline/call/pending-result.ts';
import type { CallVerdict } from '../pipeline/policy/gate.ts';
import { currentValues } from './approved-values.ts';
import { APPROVAL_COLUMNS, argumentsHash, newApprovalId, storedForm, type ApprovalRecord } from './store.ts';
import { APPROVAL_WEBHOOK, approvalWebhookPayload, consoleLink } from './webhook.ts';
import { activeTraceparent } from '../pipeline/observability/tracing.ts';

/** Hours until an undecided approval lapses, unless the tool says otherwise. */
export const DEFAULT_EXPIRY_HOURS = 72;

const MAX_PREVIEW = 2000;

/** What {@link createApprovalRequester} needs. */
export interface ApprovalRequesterOptions {
  logger: Logger;
  /** The server that owns the gated tools (and will run them). */
  server: string;
  /** `BULKHEAD_APPROVAL_WEBHOOK_URL`: when set, every request is also sent there. */
  webhookUrl?: string | undefined;
  /** `BULKHEAD_CONSOLE_URL`: where people approve; linked from log line and webhook. */
  consoleUrl?: string | undefined;
}

/**
 * Files gated calls inside the call's own transaction (`ctx.sql`): reads the values
 * the effect will use and computes the preview naming them, stores both, the exact
 * arguments with their hash, the redacted arguments,
 * requester and expiry, queues the webhook notification, and answers
 * `pending_approval` (a normal result, not an error). The call pipeline adds
 * the `pending_approval` audit event to the same transaction, so a request
 * exists exactly when its event does. The database files it under the
 * calling role's own server, whatever is claimed.
 */
export function createApprovalRequester(
  options: ApprovalRequesterOptions,
): ApprovalRequester<ApprovalRecord> {
  const { logger, server } = options;
  return {
    async request({ tool, args, ctx, task = false, policy }) {
      const spec = tool.approval!;
      const tx = ctx.sql;
      // Read once, then both stored and put into the sentence: what the person sees is what runs.
      const values = await currentValues(tool, args, ctx);
      const preview = (await spec.preview(args, ctx, values)).trim().slice(0, MAX_PREVIEW);
      const stored = storedForm(args);
      const id = newApprovalId();
      const hours = spec.expiresInHours ?? DEFAULT_EXPIRY_HOURS;
      const hash = argumentsHash(stored);
      const asked = askedOfPeople(policy, hash);
      const [record] = await tx<ApprovalRecord[]>`
        insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
          approved_values, expires_at, request_id, requested_by_token_id, requested_by_label, requested_scopes,
          customer_id, as_task, filed_in_trace, required_approvals, approver_groups, policy_version, policy_ids,
          approved_by_policy, status, decided_by, decided_arguments_hash)
        values (${id}, ${server}, ${tool.name}, ${tx.json(stored as never)},
          ${tx.json(storedForm(redactArguments(tool.input, args)) as never)}, ${hash}, ${preview},
          ${values === null ? null : tx.json(values as never)},
          now() + ${hours} * interval '1 hour', ${ctx.requestId}, ${ctx.access.tokenId}, ${ctx.access.label},
          ${[...ctx.access.scopes]}, ${ctx.access.customerId}, ${task}, ${activeTraceparent()},
          ${asked.requiredApprovals}, ${asked.approverGroups}, ${asked.policyVersion}, ${asked.policyIds},
          ${asked.approvedByPolicy}, ${asked.status}, ${asked.decidedBy}, ${asked.decidedArgumentsHash})
        returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
      if (options.webhookUrl) {
        await tx`
          insert into bulkhead_outbox (server, approval_id, kind, payload)
          values (${server}, ${id}, ${APPROVAL_WEBHOOK},
            ${tx.json(approvalWebhookPayload(record!, options.consoleUrl) as never)})`;
      }
      logger.info(
        {
          approvalId: id,
          tool: tool.name,
          requestedBy: ctx.access.label,
          expiresAt: record!.expiresAt,
          review: consoleLink(options.consoleUrl, id),
        },
        `approval needed: ${preview}`,
      );
      const result: PendingApprovalResult = {
        status: 'pending_approval',
        approval_id: id,
        // Customer-entered text is quoted in it: data for the model, checked for injection like any.
        preview: untrusted(preview, { source: previewSource(id) }),
        expires_at: record!.expiresAt.toISOString(),
        note: asked.approvedByPolicy ? RUNS_BY_POLICY_NOTE : pendingNote(asked.requiredApprovals),
      };
      if (asked.approvedByPolicy) result.status = 'approved';
      return { approvalId: id, result, approval: record! };
    },
  };
}

/**
 * What a request stores of its policy verdict (0073): how many distinct persons must approve and from
 * which groups, under which set and policies; a request the active set lets run is filed approved by
 * its first deciding policy, for its own arguments. Without a policy: one person, any approver.
 */
function askedOfPeople(policy: CallVerdict | undefined, hash: string) {
  const runs = policy?.kind === 'run' && policy.active;
  return {
    requiredApprovals: policy?.kind === 'approve' ? policy.approvals : 1,
    approverGroups: policy?.kind === 'approve' ? policy.groups : [],
    policyVersion: policy?.active ? policy.version : null,
    policyIds: policy?.active ? policy.policies : [],
    approvedByPolicy: runs,
    status: runs ? 'approved' : 'pending',
    decidedBy: runs ? `policy:${policy.policies[0]}` : null,
    decidedArgumentsHash: runs ? hash : null,
  };
}

/** The given requester, or the kit's own when the server has a gated tool: servers write no code for this. */
export function approvalsFor(
  def: ServerDefinition,
  options: {
    sql: Sql;
    logger: Logger;
    approvals?: ApprovalRequester<ApprovalRecord> | undefined;
    approvalWebhookUrl?: string | undefined;
    consoleUrl?: string | undefined;
  },
): { approvals?: ApprovalRequester<ApprovalRecord> } {
  if (options.approvals) return { approvals: options.approvals };
  if (!hasGatedTools(def)) return {};
  return {
    approvals: createApprovalRequester({
      logger: options.logger,
      server: def.name,
      webhookUrl: options.approvalWebhookUrl,
      consoleUrl: options.consoleUrl,
    }),
  };
}
