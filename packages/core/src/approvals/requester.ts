import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { ApprovalRequester } from '../pipeline/call/call-tool.ts';
import { hasGatedTools, type ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import { redactArguments } from '../pipeline/text-safety/secret.ts';
import { untrusted } from '../pipeline/text-safety/untrusted/wrap.ts';
import { PENDING_NOTE, previewSource, type PendingApprovalResult } from '../pipeline/call/pending-result.ts';
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
    async request({ tool, args, ctx, task = false }) {
      const spec = tool.approval!;
      const tx = ctx.sql;
      // Read once, then both stored and put into the sentence: what the person sees is what runs.
      const values = await currentValues(tool, args, ctx);
      const preview = (await spec.preview(args, ctx, values)).trim().slice(0, MAX_PREVIEW);
      const stored = storedForm(args);
      const id = newApprovalId();
      const hours = spec.expiresInHours ?? DEFAULT_EXPIRY_HOURS;
      const [record] = await tx<ApprovalRecord[]>`
        insert into bulkhead_approvals (id, server, tool, arguments, arguments_redacted, arguments_hash, preview,
          approved_values, expires_at, request_id, requested_by_token_id, requested_by_label, requested_scopes,
          customer_id, as_task, filed_in_trace)
        values (${id}, ${server}, ${tool.name}, ${tx.json(stored as never)},
          ${tx.json(storedForm(redactArguments(tool.input, args)) as never)}, ${argumentsHash(stored)}, ${preview},
          ${values === null ? null : tx.json(values as never)},
          now() + ${hours} * interval '1 hour', ${ctx.requestId}, ${ctx.access.tokenId}, ${ctx.access.label},
          ${[...ctx.access.scopes]}, ${ctx.access.customerId}, ${task}, ${activeTraceparent()})
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
        note: PENDING_NOTE,
      };
      return { approvalId: id, result, approval: record! };
    },
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
