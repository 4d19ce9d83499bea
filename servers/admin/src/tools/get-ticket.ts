import { defineTool, ticketKeyArg, untrusted, untrustedTextRef } from '@bulkhead/core';
import { getTicketMessages, TICKET_AUTHOR_KINDS, TICKET_CATEGORIES, TICKET_STATUSES } from '@bulkhead/db';
import { z } from 'zod';
import { getTicket as getTicketRow } from '../queries.ts';
import { icons, notFound, untrustedOrNull } from './shared.ts';

/** Threads longer than this come back with their latest messages and `truncated`. */
const MAX_MESSAGES = 50;

export const getTicket = defineTool({
  name: 'get_ticket',
  title: 'Get ticket',
  description:
    `Returns the ticket with this key in full: customer_id, sender, subject, category, status, received, escalated_at, ` +
    `escalation_reason, messages (author_kind, author, sent, body; the latest ${MAX_MESSAGES}, oldest first), truncated. ` +
    'list_tickets gives short forms of many.',
  scope: 'tickets:read',
  input: z.strictObject({ key: ticketKeyArg.describe('Ticket key.') }),
  output: z.object({
    key: z.string(),
    customer_id: z.string(),
    sender: untrustedTextRef,
    subject: untrustedTextRef,
    category: z.enum(TICKET_CATEGORIES).nullable(),
    status: z.enum(TICKET_STATUSES),
    received: z.string(),
    escalated_at: z.string().nullable(),
    escalation_reason: untrustedOrNull,
    messages: z.array(
      z.object({
        author_kind: z.enum(TICKET_AUTHOR_KINDS),
        author: untrustedTextRef,
        sent: z.string(),
        body: untrustedTextRef,
      }),
    ),
    truncated: z.boolean(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icons.ticket,
  timeoutMs: 5_000,
  handler: async ({ key }, ctx) => {
    const t = await getTicketRow(ctx.sql, key);
    if (!t) throw notFound.ticket(key);
    const { messages, total } = await getTicketMessages(ctx.sql, key, MAX_MESSAGES);
    return {
      key: t.key,
      customer_id: t.customerId,
      sender: untrusted(t.customerName, { source: `customer ${t.customerId}` }),
      subject: untrusted(t.subject, { source: `ticket ${key} subject` }),
      category: t.category,
      status: t.status,
      received: t.receivedAt.toISOString(),
      escalated_at: t.escalatedAt?.toISOString() ?? null,
      escalation_reason:
        t.escalationReason === null
          ? null
          : untrusted(t.escalationReason, { source: `ticket ${key} escalation` }),
      messages: messages.map((m) => ({
        author_kind: m.authorKind,
        author: untrusted(m.authorName, { source: `ticket ${key} message ${m.n}` }),
        sent: m.createdAt.toISOString(),
        body: untrusted(m.body, { source: `ticket ${key} message ${m.n}` }),
      })),
      truncated: total > messages.length,
    };
  },
});
