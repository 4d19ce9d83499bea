import { defineTool, offsetArg, pageCheck, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { messageArg, ticketKeyArg } from '@bulkhead/domain';
import {
  getTicketThread,
  THREAD_BODY_CHARS,
  TICKET_CATEGORIES,
  TICKET_STATUSES,
  ticketThreadOutput,
  ticketThreadResult,
} from '@bulkhead/domain';
import { z } from 'zod';
import { getTicket as getTicketRow } from '../queries.ts';
import { icons, notFound, untrustedOrNull } from './shared.ts';

const chars = (n: number) => n.toLocaleString('en-US');
/** Messages a page of a thread shows. */
const THREAD_PAGE = 20;

export const getTicket = defineTool({
  name: 'get_ticket',
  title: 'Get ticket',
  description: `Returns ticket key: customer_id, sender, subject, category, status, received, escalation, messages (${THREAD_PAGE} newest, oldest first; body_cut past ${chars(THREAD_BODY_CHARS)}), truncated, next_offset. offset: older; message: one whole body. list_tickets lists many.`,
  scope: 'tickets:read',
  input: z.strictObject({
    key: ticketKeyArg.describe('e.g. T-1001.'),
    offset: offsetArg,
    message: messageArg,
  }),
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
    ...ticketThreadOutput,
  }),
  annotations: READ_ONLY,
  icons: icons.ticket,
  timeoutMs: 5_000,
  handler: async ({ key, offset, message }, ctx) => {
    const t = await getTicketRow(ctx.sql, key);
    if (!t) throw notFound.ticket(key);
    const page = await getTicketThread(
      ctx.sql,
      key,
      message === undefined ? { limit: THREAD_PAGE, offset } : { message },
    );
    if (message === undefined) pageCheck(offset, page.total, 'message');
    else if (!page.messages.length) throw notFound.message(key, message, page.total);
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
      ...ticketThreadResult(key, page),
    };
  },
});
