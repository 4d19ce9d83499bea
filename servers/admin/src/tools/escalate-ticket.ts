import { defineTool, ticketKeyArg, ToolError } from '@bulkhead/core';
import { TICKET_STATUSES } from '@bulkhead/db';
import { z } from 'zod';
import { escalateTicket as escalate } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const escalateTicket = defineTool({
  name: 'escalate_ticket',
  title: 'Escalate ticket',
  description:
    'Hands the ticket with this key to second-level support: status escalated, reason and time kept on the ticket; ' +
    'the customer sees only a note that it was passed on. Returns key, previous_status, status, escalated_at. ' +
    'Refuses closed or already escalated tickets. answer_ticket replies to the customer instead.',
  scope: 'tickets:write',
  input: z.strictObject({
    key: ticketKeyArg.describe('Ticket key.'),
    reason: z.string().trim().min(10).max(500).describe('Why second level is needed; kept on the ticket.'),
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
