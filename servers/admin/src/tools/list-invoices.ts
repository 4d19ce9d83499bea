import { customerIdArg, defineTool, limitArg, offsetArg, pageCheck } from '@bulkhead/core';
import { z } from 'zod';
import { customerExists, INVOICE_STATES, listInvoices as listInvoiceRows } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const listInvoices = defineTool({
  name: 'list_invoices',
  title: 'List invoices',
  description:
    'Lists invoices newest first, filtered by customer_id, status and period (issue year or month), all optional; ' +
    'limit and offset page. Returns invoices (invoice_number, customer_id, status, issued_on, due_on, currency, total_cents, ' +
    'due_cents = total minus payments and credit notes), count, total, truncated. get_customer sums a balance.',
  scope: 'invoices:read',
  input: z.strictObject({
    customer_id: customerIdArg.optional().describe('Only this customer.'),
    status: z
      .enum(INVOICE_STATES)
      .optional()
      .describe('overdue = open and past due_on; open includes overdue.'),
    period: z
      .string()
      .regex(/^\d{4}(-(0[1-9]|1[0-2]))?$/)
      .optional()
      .describe('Issued in this year or month: 2026 or 2026-03.'),
    limit: limitArg(20, 100),
    offset: offsetArg,
  }),
  output: z.object({
    invoices: z.array(
      z.object({
        invoice_number: z.string(),
        customer_id: z.string(),
        status: z.enum(INVOICE_STATES),
        issued_on: z.string(),
        due_on: z.string(),
        currency: z.string(),
        total_cents: z.number(),
        due_cents: z.number(),
      }),
    ),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icons.invoice,
  timeoutMs: 5_000,
  handler: async ({ customer_id, status, period, limit, offset }, ctx) => {
    const { rows, total } = await listInvoiceRows(ctx.sql, {
      customerId: customer_id,
      status,
      period,
      limit,
      offset,
    });
    if (total === 0 && customer_id && !(await customerExists(ctx.sql, customer_id)))
      throw notFound.customer(customer_id);
    pageCheck(offset, total, 'invoice');
    const invoices = rows.map((r) => ({
      invoice_number: r.number,
      customer_id: r.customerId,
      status: r.status,
      issued_on: r.issuedOn,
      due_on: r.dueOn,
      currency: r.currency,
      total_cents: r.totalCents,
      due_cents: r.dueCents,
    }));
    return { invoices, count: invoices.length, total, truncated: offset + invoices.length < total };
  },
});
