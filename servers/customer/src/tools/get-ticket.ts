import { defineTool, ticketKeyArg, untrusted, untrustedTextRef } from '@bulkhead/core';
import { getTicketMessages, TICKET_AUTHOR_KINDS, TICKET_CATEGORIES, TICKET_STATUSES } from '@bulkhead/db';
import { z } from 'zod';
import { getTicket as findTicket } from '../queries.ts';
import { customerOf, icons, notFound, ro } from './shared.ts';

/** Threads longer than this come back with their latest messages and `truncated`. */
const MAX_MESSAGES = 50;

export const getTicket = defineTool({
  name: 'get_ticket',
  title: 'Ticket',
  description:
    'One ticket of this account. Returns key, subject, category, status, created_at, updated_at, truncated and ' +
    `messages (latest ${MAX_MESSAGES}, oldest first). key: e.g. T-1001. list_my_tickets lists tickets without text.`,
  scope: 'tickets:read',
  input: z.strictObject({ key: ticketKeyArg.describe('Ticket key.') }),
  output: z.object({
    key: z.string(),
    subject: untrustedTextRef,
    category: z.enum(TICKET_CATEGORIES).nullable(),
    status: z.enum(TICKET_STATUSES),
    created_at: z.string(),
    updated_at: z.string(),
    messages: z.array(
      z.object({
        n: z.number(),
        author_kind: z.enum(TICKET_AUTHOR_KINDS),
        author_name: untrustedTextRef,
        created_at: z.string(),
        body: untrustedTextRef,
      }),
    ),
    truncated: z.boolean(),
  }),
  annotations: ro,
  icons: icons.ticket,
  timeoutMs: 5_000,
  handler: async ({ key }, ctx) => {
    const customerId = await customerOf(ctx);
    const t = await findTicket(ctx.sql, customerId, key);
    if (!t) throw notFound.ticket(key);
    const { messages, total } = await getTicketMessages(ctx.sql, key, MAX_MESSAGES);
    return {
      key: t.key,
      subject: untrusted(t.subject, { source: `ticket ${key} subject` }),
      category: t.category,
      status: t.status,
      created_at: t.createdAt.toISOString(),
      updated_at: t.updatedAt.toISOString(),
      messages: messages.map((m) => ({
        n: m.n,
        author_kind: m.authorKind,
        author_name: untrusted(m.authorName, { source: `ticket ${key} message ${m.n} author` }),
        created_at: m.createdAt.toISOString(),
        body: untrusted(m.body, { source: `ticket ${key} message ${m.n}` }),
      })),
      truncated: total > messages.length,
    };
  },
});
