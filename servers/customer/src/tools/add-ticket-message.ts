import { defineTool, ToolError } from '@bulkhead/core';
import { ticketKeyArg } from '@bulkhead/domain';
import { z } from 'zod';
import { getTicket, insertCustomerMessage } from '../queries.ts';
import { body, customerOf, icons, notFound, write } from './shared.ts';

export const addTicketMessage = defineTool({
  name: 'add_ticket_message',
  title: 'Add ticket message',
  description:
    'Adds body as a message to this account’s ticket key. Returns key, n, status, created_at. A pending or resolved ' +
    'ticket reopens; a closed one refuses (open_ticket starts a new one).',
  scope: 'tickets:write',
  input: z.strictObject({ key: ticketKeyArg.describe('Ticket key, e.g. T-1001.'), body }),
  annotations: write,
  icons: icons.reply,
  timeoutMs: 5_000,
  handler: async ({ key, body }, ctx) => {
    const customerId = await customerOf(ctx);
    // The row lock orders this message against a concurrent close by the helpdesk.
    return ctx.sql.begin(async (tx) => {
      const sql = tx as unknown as typeof ctx.sql;
      const ticket = await getTicket(sql, customerId, key, true);
      if (!ticket) throw notFound.ticket(key);
      if (ticket.status === 'closed')
        throw new ToolError(
          `ticket ${key} is closed and takes no more messages — open_ticket starts a new one`,
        );
      const added = await insertCustomerMessage(sql, { customerId, key, body });
      return { key, n: added.n, status: added.status, created_at: added.createdAt.toISOString() };
    });
  },
});
