import { defineTool, limitArg, offsetArg, pageCheck, READ_ONLY } from '@bulkhead/core';
import { customerIdArg } from '@bulkhead/domain';
import { z } from 'zod';
import { customerExists, INVOICE_STATES, listInvoices as listInvoiceRows } from '../queries.ts';
import { icons, notFound } from './shared.ts';

export const listInvoices = defineTool({
  name: 'list_invoices',
  title: 'List invoices',
  description:
    'Invoices newest first, optionally of customer_id, status or period; limit, offset page. Returns invoices (number, customer, status, dates, currency, total, due), count, total, truncated. get_customer sums up.',
  scope: 'invoices:read',
  input: z.strictObject({
    customer_id: customerIdArg.optional().describe('e.g. C-1001.'),
    status: z.enum(INVOICE_STATES).optional().describe('Filter; open includes overdue.'),
    period: z
      .string()
      .regex(/^\d{4}(-(0[1-9]|1[0-2]))?$/)
      .optional()
      .describe('Year or month: 2026, 2026-03.'),
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
  annotations: READ_ONLY,
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
