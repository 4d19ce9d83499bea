import {
  defineTool,
  limitArg,
  offsetArg,
  pageCheck,
  untrusted,
  untrustedTextRef,
  READ_ONLY,
} from '@bulkhead/core';
import { TICKET_CATEGORIES, TICKET_STATUSES } from '@bulkhead/domain';
import { z } from 'zod';
import { listTickets } from '../queries.ts';
import { customerOf, icons } from './shared.ts';

export const listMyTickets = defineTool({
  name: 'list_my_tickets',
  title: 'My tickets',
  description:
    'This account’s tickets, latest activity first. Returns tickets (key, subject, category, status, created_at, ' +
    'updated_at, message_count; no text), count, total, truncated. status: filter, default all; limit, offset page. ' +
    'get_ticket shows the messages.',
  scope: 'tickets:read',
  input: z.strictObject({
    status: z.enum(TICKET_STATUSES).optional().describe('Only this status (default: all).'),
    limit: limitArg(20, 100),
    offset: offsetArg,
  }),
  output: z.object({
    tickets: z.array(
      z.object({
        key: z.string(),
        subject: untrustedTextRef,
        category: z.enum(TICKET_CATEGORIES).nullable(),
        status: z.enum(TICKET_STATUSES),
        created_at: z.string(),
        updated_at: z.string(),
        message_count: z.number(),
      }),
    ),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: READ_ONLY,
  icons: icons.tickets,
  timeoutMs: 5_000,
  handler: async ({ status, limit, offset }, ctx) => {
    const customerId = await customerOf(ctx);
    const { rows, total } = await listTickets(ctx.sql, { customerId, status, limit, offset });
    pageCheck(offset, total, 'ticket');
    const tickets = rows.map((t) => ({
      key: t.key,
      subject: untrusted(t.subject, { source: `ticket ${t.key} subject` }),
      category: t.category,
      status: t.status,
      created_at: t.createdAt.toISOString(),
      updated_at: t.updatedAt.toISOString(),
      message_count: t.messageCount,
    }));
    return { tickets, count: tickets.length, total, truncated: offset + tickets.length < total };
  },
});
