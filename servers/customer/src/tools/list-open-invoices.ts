import { defineTool, limitArg, offsetArg, pageCheck, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import { listOpenInvoices as listOpen } from '../queries.ts';
import { customerOf, icons } from './shared.ts';

export const listOpenInvoices = defineTool({
  name: 'list_open_invoices',
  title: 'Unpaid invoices',
  description:
    'This account’s unpaid invoices, most overdue first. Returns invoices (invoice_number, issued_on, due_on, days_overdue, ' +
    'amount_due_cents, currency, status), count, total, truncated. min_days_overdue: default 0, all unpaid; ' +
    'limit, offset page. Paid and void ones only via get_invoice.',
  scope: 'invoices:read',
  input: z.strictObject({
    min_days_overdue: z
      .number()
      .int()
      .min(0)
      .max(3650)
      .default(0)
      .describe('Minimum days past due (default 0).'),
    limit: limitArg(20, 100),
    offset: offsetArg,
  }),
  output: z.object({
    invoices: z.array(
      z.object({
        invoice_number: z.string(),
        issued_on: z.string(),
        due_on: z.string(),
        days_overdue: z.number(),
        amount_due_cents: z.number(),
        currency: z.string(),
        status: z.enum(['open', 'overdue']),
      }),
    ),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
  }),
  annotations: READ_ONLY,
  icons: icons.invoices,
  timeoutMs: 5_000,
  handler: async ({ min_days_overdue, limit, offset }, ctx) => {
    const customerId = await customerOf(ctx);
    const { rows, total } = await listOpen(ctx.sql, {
      customerId,
      minDaysOverdue: min_days_overdue,
      limit,
      offset,
    });
    pageCheck(offset, total, 'invoice');
    const invoices = rows.map((r) => ({
      invoice_number: r.number,
      issued_on: r.issuedOn,
      due_on: r.dueOn,
      days_overdue: r.daysOverdue,
      amount_due_cents: r.dueCents,
      currency: r.currency,
      status: r.status as 'open' | 'overdue',
    }));
    return { invoices, count: invoices.length, total, truncated: offset + invoices.length < total };
  },
});
