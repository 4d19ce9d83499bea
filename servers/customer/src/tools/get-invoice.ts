import { defineTool, untrusted, untrustedTextSchema, READ_ONLY } from '@bulkhead/core';
import { invoiceNumberArg } from '@bulkhead/domain';
import { z } from 'zod';
import { getInvoice as findInvoice, invoiceDetails, PAYMENT_METHODS } from '../queries.ts';
import { customerOf, icons, notFound } from './shared.ts';

/** The most lines, payments and credit notes one answer holds, each. */
const MAX_ROWS = 100;

export const getInvoice = defineTool({
  name: 'get_invoice',
  title: 'Invoice',
  description:
    'One invoice of this account, also paid or void. Returns status, issued_on, due_on, days_overdue, total_cents, ' +
    `amount_due_cents (total − payments − credit notes), lines, payments, credit_notes (${MAX_ROWS} each at most), ` +
    'truncated (a list was cut). invoice_number: e.g. R-2026-0001. list_open_invoices lists unpaid ones.',
  scope: 'invoices:read',
  input: z.strictObject({ invoice_number: invoiceNumberArg.describe('e.g. R-2026-0001.') }),
  output: z.object({
    invoice_number: z.string(),
    status: z.enum(['open', 'overdue', 'paid', 'void']),
    issued_on: z.string(),
    due_on: z.string(),
    days_overdue: z.number(),
    currency: z.string(),
    total_cents: z.number(),
    amount_due_cents: z.number(),
    lines: z.array(
      z.object({
        description: z.string(),
        quantity: z.number(),
        unit_price_cents: z.number(),
        amount_cents: z.number(),
      }),
    ),
    payments: z.array(
      z.object({ received_on: z.string(), amount_cents: z.number(), method: z.enum(PAYMENT_METHODS) }),
    ),
    credit_notes: z.array(
      z.object({
        number: z.string(),
        issued_on: z.string(),
        amount_cents: z.number(),
        // Inline: with one untrusted field, a `$defs` entry and its `$ref` would only add characters.
        reason: untrustedTextSchema,
      }),
    ),
    truncated: z.boolean(),
  }),
  annotations: READ_ONLY,
  icons: icons.invoice,
  timeoutMs: 5_000,
  handler: async ({ invoice_number }, ctx) => {
    const customerId = await customerOf(ctx);
    const inv = await findInvoice(ctx.sql, customerId, invoice_number);
    if (!inv) throw notFound.invoice(invoice_number);
    const { lines, payments, creditNotes, truncated } = await invoiceDetails(ctx.sql, inv.number, MAX_ROWS);
    return {
      invoice_number: inv.number,
      status: inv.status,
      issued_on: inv.issuedOn,
      due_on: inv.dueOn,
      days_overdue: inv.daysOverdue,
      currency: inv.currency,
      total_cents: inv.totalCents,
      amount_due_cents: inv.status === 'void' ? 0 : inv.dueCents,
      lines: lines.map((l) => ({
        description: l.description,
        quantity: l.quantity,
        unit_price_cents: l.unitPriceCents,
        amount_cents: l.amountCents,
      })),
      payments: payments.map((p) => ({
        received_on: p.receivedOn,
        amount_cents: p.amountCents,
        method: p.method,
      })),
      credit_notes: creditNotes.map((c) => ({
        number: c.number,
        issued_on: c.issuedOn,
        amount_cents: c.amountCents,
        // Written by an operator, often quoting the customer: text, never instructions.
        reason: untrusted(c.reason, { source: `credit note ${c.number} reason` }),
      })),
      truncated,
    };
  },
});
