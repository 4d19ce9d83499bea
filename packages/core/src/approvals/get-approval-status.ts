import { z } from 'zod';
import type { Sql } from '@bulkhead/db';
import { defineTool, READ_ONLY } from '../pipeline/tool-definition/define-tool.ts';
import { svgIcon } from '../pipeline/tool-definition/icon.ts';
import { ToolError } from '../pipeline/tool-definition/errors.ts';
import { untrusted, untrustedTextSchema } from '../pipeline/text-safety/untrusted/wrap.ts';
import { previewSource } from '../pipeline/call/pending-result.ts';
import {
  APPROVAL_COLUMNS,
  APPROVAL_ID,
  APPROVAL_STATUSES,
  effectiveStatus,
  type ApprovalRecord,
  type ApprovalStatus,
} from './store.ts';

const NOTES: Record<ApprovalStatus, string> = {
  pending: 'Waiting for a person; nothing has happened yet.',
  approved: 'Approved and about to run; ask again in a few seconds for the result.',
  executed: 'Approved and carried out; result holds what the tool returned.',
  rejected: 'Rejected by a person; nothing was done. reason says why.',
  expired: 'Nobody decided before expires_at; nothing was done and it will never run.',
  failed: 'Approved, but it did not complete and none of its changes were kept; error says why.',
  withdrawn:
    'Withdrawn by the requesting client before anyone decided; nothing was done and it will never run.',
};

async function findApproval(
  sql: Sql,
  server: string,
  id: string,
  customerId: string | null,
): Promise<ApprovalRecord | undefined> {
  const [row] = await sql<ApprovalRecord[]>`
    select ${sql.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals
    where id = ${id} and server = ${server}
    ${customerId === null ? sql`` : sql`and customer_id = ${customerId}`}`;
  return row;
}

/**
 * Added by `createServer` to every server with a gated tool: the model's way
 * to learn what became of a `pending_approval` answer. It sees only the
 * server's own approvals, and a customer-bound token only those requested for
 * its customer.
 */
export const getApprovalStatus = defineTool({
  name: 'get_approval_status',
  title: 'Get approval status',
  description:
    'Returns what became of a gated request (approval_id from its pending_approval answer): status, preview, decided_at, decided_by, reason, result or error. Read-only.',
  scope: 'approvals:read',
  input: z.strictObject({
    approval_id: z.string().regex(APPROVAL_ID).describe('From pending_approval.'),
  }),
  output: z.object({
    approval_id: z.string(),
    tool: z.string().describe('The gated tool that filed the request.'),
    status: z.enum(APPROVAL_STATUSES),
    preview: untrustedTextSchema.describe('What a person was asked to approve (quotes customer text).'),
    requested_at: z.string(),
    expires_at: z.string(),
    decided_at: z.string().nullable(),
    decided_by: z.string().nullable(),
    reason: z.string().nullable().describe('Why the person decided as they did, when they said.'),
    // What a handler returns: an object (its structured result) or a text.
    result: z
      .union([z.looseObject({}), z.string(), z.null()])
      .describe('What the tool returned; null until executed.'),
    error: z.string().nullable().describe('Why an approved request did not complete.'),
    note: z.string(),
  }),
  annotations: READ_ONLY,
  // A check mark in a circle: the decision on a request.
  icons: svgIcon(
    "<circle cx='8' cy='8' r='7'/><path d='M4 8l3 3 5-6' fill='none' stroke='#fff' stroke-width='2'/>",
  ),
  handler: async ({ approval_id }, ctx) => {
    const a = await findApproval(ctx.sql, ctx.server, approval_id, ctx.access.customerId);
    if (!a)
      throw new ToolError(
        `approval ${approval_id} not found on this server — check the approval_id from the pending_approval answer`,
      );
    const status = effectiveStatus(a);
    return {
      approval_id: a.id,
      tool: a.tool,
      status,
      preview: untrusted(a.preview, { source: previewSource(a.id) }),
      requested_at: a.requestedAt.toISOString(),
      expires_at: a.expiresAt.toISOString(),
      decided_at: a.decidedAt?.toISOString() ?? null,
      decided_by: a.decidedBy,
      reason: a.decisionReason,
      // Stored held to the tool's output, as a live call answers it (`storedForm`): an object or a text.
      result: (a.result ?? null) as Record<string, unknown> | string | null,
      error: a.error,
      note: NOTES[status],
    };
  },
});
