import { textArg, defineTool, limitArg, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import { findCustomers as findCustomerRows } from '../queries.ts';
import { icons, untrustedOrNull } from './shared.ts';

export const findCustomers = defineTool({
  name: 'find_customers',
  title: 'Find customers',
  description:
    'Customers whose number, name or e-mail contains query. Returns customers (customer_id, name, email, city, open_invoices, open_tickets), count, truncated; limit caps. get_customer gives one.',
  scope: 'customers:read',
  input: z.strictObject({
    query: textArg(2, 100).describe('Part of number, name, e-mail.'),
    limit: limitArg(10, 50),
  }),
  output: z.object({
    customers: z.array(
      z.object({
        customer_id: z.string(),
        name: untrustedTextRef,
        email: untrustedTextRef,
        city: untrustedOrNull,
        open_invoices: z.number(),
        open_tickets: z.number(),
      }),
    ),
    count: z.number(),
    truncated: z.boolean(),
  }),
  annotations: READ_ONLY,
  icons: icons.customer,
  timeoutMs: 5_000,
  handler: async ({ query, limit }, ctx) => {
    const rows = await findCustomerRows(ctx.sql, { query, limit: limit + 1 });
    const customers = rows.slice(0, limit).map((c) => {
      const source = `customer ${c.id}`;
      return {
        customer_id: c.id,
        name: untrusted(c.name, { source }),
        email: untrusted(c.email, { source }),
        city: c.city === null ? null : untrusted(c.city, { source }),
        open_invoices: c.openInvoices,
        open_tickets: c.openTickets,
      };
    });
    return { customers, count: customers.length, truncated: rows.length > limit };
  },
});
