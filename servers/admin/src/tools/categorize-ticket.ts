import { defineTool } from '@bulkhead/core';
import { ticketKeyArg } from '@bulkhead/domain';
import { TICKET_CATEGORIES } from '@bulkhead/domain';
import { z } from 'zod';
import { setTicketCategory } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const categorizeTicket = defineTool({
  name: 'categorize_ticket',
  title: 'Categorize ticket',
  description:
    'Sets the category of ticket key. Returns key, previous_category, category, changed. escalate_ticket changes the status instead.',
  scope: 'tickets:write',
  input: z.strictObject({
    key: ticketKeyArg.describe('e.g. T-1001.'),
    category: z.enum(TICKET_CATEGORIES).describe('New category.'),
  }),
  output: z.object({
    key: z.string(),
    previous_category: z.enum(TICKET_CATEGORIES).nullable(),
    category: z.enum(TICKET_CATEGORIES),
    changed: z.boolean(),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icons.tag,
  timeoutMs: 5_000,
  handler: async ({ key, category }, ctx) => {
    const row = await setTicketCategory(ctx.sql, key, category);
    if (!row) throw notFound.ticket(key);
    return { key, previous_category: row.previous, category, changed: row.previous !== category };
  },
});
