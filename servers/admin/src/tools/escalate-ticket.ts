import { textArg, defineTool, ToolError } from '@bulkhead/core';
import { ticketKeyArg } from '@bulkhead/domain';
import { TICKET_STATUSES } from '@bulkhead/domain';
import { z } from 'zod';
import { escalateTicket as escalate } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const escalateTicket = defineTool({
  name: 'escalate_ticket',
  title: 'Escalate ticket',
  description:
    'Hands ticket key to second-level support with reason (the customer only sees it was passed on); closed or escalated refused. Returns key, previous_status, status, escalated_at. answer_ticket replies.',
  scope: 'tickets:write',
  input: z.strictObject({
    key: ticketKeyArg.describe('e.g. T-1001.'),
    reason: textArg(10, 500).describe('Why second level.'),
  }),
  output: z.object({
    key: z.string(),
    previous_status: z.enum(TICKET_STATUSES),
    status: z.literal('escalated'),
    escalated_at: z.string(),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  icons: icons.escalate,
  timeoutMs: 5_000,
  handler: async ({ key, reason }, ctx) => {
    const row = await escalate(ctx.sql, key, reason);
    if (!row) throw notFound.ticket(key);
    if (row.previous === 'closed')
      throw new ToolError(
        `ticket ${key} is closed and cannot be escalated — a new request from the customer opens a new ticket`,
      );
    if (!row.changed)
      throw new ToolError(
        `ticket ${key} is already escalated (since ${row.escalatedAt?.toISOString() ?? 'an unknown time'}); nothing changed — get_ticket shows the recorded reason`,
      );
    return {
      key,
      previous_status: row.previous,
      status: 'escalated' as const,
      escalated_at: row.escalatedAt!.toISOString(),
    };
  },
});
