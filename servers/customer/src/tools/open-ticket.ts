import { defineTool, lineArg } from '@bulkhead/core';
import { z } from 'zod';
import { CUSTOMER_CATEGORIES, insertTicket } from '../queries.ts';
import { body, customerOf, icons, write } from './shared.ts';

export const openTicket = defineTool({
  name: 'open_ticket',
  title: 'Open ticket',
  description:
    'Opens a new ticket for this account: subject, category, body (the first message). Returns key, status, created_at. ' +
    'Each call opens one more; add_ticket_message adds to an existing ticket.',
  scope: 'tickets:write',
  input: z.strictObject({
    subject: lineArg(3, 200).describe('Short summary.'),
    category: z.enum(CUSTOMER_CATEGORIES).describe('Topic.'),
    body,
  }),
  annotations: write,
  icons: icons.open,
  timeoutMs: 5_000,
  handler: async ({ subject, category, body }, ctx) => {
    const customerId = await customerOf(ctx);
    const ticket = await insertTicket(ctx.sql, { customerId, subject, category, body });
    return { key: ticket.key, status: 'open' as const, created_at: ticket.createdAt.toISOString() };
  },
});
