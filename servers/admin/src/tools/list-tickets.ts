import {
  defineTool,
  limitArg,
  offsetArg,
  pageCheck,
  untrusted,
  untrustedTextRef,
  READ_ONLY,
} from '@bulkhead/core';
import { customerIdArg } from '@bulkhead/domain';
import { TICKET_CATEGORIES, TICKET_STATUSES } from '@bulkhead/domain';
import { z } from 'zod';
import { customerExists, listTickets as listTicketRows } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const listTickets = defineTool({
  name: 'list_tickets',
  title: 'List tickets',
  description:
    'Tickets newest first, optionally of status, category or customer_id; limit, offset page. Returns short forms (key, subject, sender, customer, received, category, status), count, total, truncated. get_ticket has the text.',
  scope: 'tickets:read',
  input: z.strictObject({
    status: z.enum(TICKET_STATUSES).optional().describe('Filter.'),
    category: z
      .enum([...TICKET_CATEGORIES, 'uncategorized'])
      .optional()
      .describe('Filter; uncategorized: unset.'),
    customer_id: customerIdArg.optional().describe('e.g. C-1001.'),
    limit: limitArg(20, 100),
    offset: offsetArg,
  }),
  output: z.object({
    tickets: z.array(
      z.object({
        key: z.string(),
        subject: untrustedTextRef,
        sender: untrustedTextRef,
        customer_id: z.string(),
        received: z.string(),
        category: z.enum(TICKET_CATEGORIES).nullable(),
        status: z.enum(TICKET_STATUSES),
      }),
    ),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: READ_ONLY,
  icons: icons.tickets,
  timeoutMs: 5_000,
  handler: async ({ status, category, customer_id, limit, offset }, ctx) => {
    const { rows, total } = await listTicketRows(ctx.sql, {
      status,
      category,
      customerId: customer_id,
      limit,
      offset,
    });
    if (total === 0 && customer_id && !(await customerExists(ctx.sql, customer_id)))
      throw notFound.customer(customer_id);
    pageCheck(offset, total, 'ticket');
    const tickets = rows.map((t) => ({
      key: t.key,
      subject: untrusted(t.subject, { source: `ticket ${t.key} subject` }),
      sender: untrusted(t.sender, { source: `customer ${t.customerId}` }),
      customer_id: t.customerId,
      received: t.receivedAt.toISOString(),
      category: t.category,
      status: t.status,
    }));
    return { tickets, count: tickets.length, total, truncated: offset + tickets.length < total };
  },
});
