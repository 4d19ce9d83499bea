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
import { getTicket as findTicket } from '../queries.ts';
import { customerOf, icons, notFound } from './shared.ts';

const chars = (n: number) => n.toLocaleString('en-US');
/** Messages a page of a thread shows. */
const THREAD_PAGE = 20;

export const getTicket = defineTool({
  name: 'get_ticket',
  title: 'Ticket',
  description: `Returns one ticket of this account: key, subject, category, status, created_at, updated_at, messages (${THREAD_PAGE} newest, oldest first; body_cut past ${chars(THREAD_BODY_CHARS)}), messages_total, truncated, next_offset. offset: older; message: one whole body. list_my_tickets lists tickets.`,
  scope: 'tickets:read',
  input: z.strictObject({
    key: ticketKeyArg.describe('Ticket key, e.g. T-1001.'),
    offset: offsetArg,
    message: messageArg,
  }),
  output: z.object({
    key: z.string(),
    subject: untrustedTextRef,
    category: z.enum(TICKET_CATEGORIES).nullable(),
    status: z.enum(TICKET_STATUSES),
    created_at: z.string(),
    updated_at: z.string(),
    ...ticketThreadOutput,
  }),
  annotations: READ_ONLY,
  icons: icons.ticket,
  timeoutMs: 5_000,
  handler: async ({ key, offset, message }, ctx) => {
    const customerId = await customerOf(ctx);
    const t = await findTicket(ctx.sql, customerId, key);
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
      subject: untrusted(t.subject, { source: `ticket ${key} subject` }),
      category: t.category,
      status: t.status,
      created_at: t.createdAt.toISOString(),
      updated_at: t.updatedAt.toISOString(),
      ...ticketThreadResult(key, page),
    };
  },
});
