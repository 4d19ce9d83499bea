import { defineTool, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { customerIdArg } from '@bulkhead/domain';
import { z } from 'zod';
import { getCustomer as getCustomerRow } from '../queries.ts';
import { icons, notFound, untrustedOrNull } from './shared.ts';

export const getCustomer = defineTool({
  name: 'get_customer',
  title: 'Get customer',
  description:
    'Returns customer customer_id in full: contact details, language, due_cents, overdue_cents, open and overdue invoices, open tickets. find_customers searches.',
  scope: 'customers:read',
  input: z.strictObject({ customer_id: customerIdArg.describe('e.g. C-1001.') }),
  output: z.object({
    customer_id: z.string(),
    name: untrustedTextRef,
    email: untrustedTextRef,
    phone: untrustedOrNull,
    street: untrustedOrNull,
    postal_code: untrustedOrNull,
    city: untrustedOrNull,
    country: z.string(),
    language: z.string(),
    due_cents: z.number(),
    overdue_cents: z.number(),
    open_invoices: z.number(),
    overdue_invoices: z.number(),
    open_tickets: z.number(),
  }),
  annotations: READ_ONLY,
  icons: icons.customer,
  timeoutMs: 5_000,
  handler: async ({ customer_id }, ctx) => {
    const c = await getCustomerRow(ctx.sql, customer_id);
    if (!c) throw notFound.customer(customer_id);
    const source = `customer ${c.id}`;
    const text = (value: string | null) => (value === null ? null : untrusted(value, { source }));
    return {
      customer_id: c.id,
      name: untrusted(c.name, { source }),
      email: untrusted(c.email, { source }),
      phone: text(c.phone),
      street: text(c.street),
      postal_code: text(c.postalCode),
      city: text(c.city),
      country: c.country,
      language: c.language,
      due_cents: c.dueCents,
      overdue_cents: c.overdueCents,
      open_invoices: c.openInvoices,
      overdue_invoices: c.overdueInvoices,
      open_tickets: c.openTickets,
    };
  },
});
