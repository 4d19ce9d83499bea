import { textArg, defineTool, quoted, ToolError, type ToolContext } from '@bulkhead/core';
import { invoiceNumberArg } from '@bulkhead/domain';
import { z } from 'zod';
import { insertCreditNote, lockInvoice } from '../queries.ts';
import { GATED, icons, money, notFound } from './shared.ts';

async function creditableInvoice(ctx: ToolContext, number: string, amountCents: number) {
  const invoice = await lockInvoice(ctx.sql, number);
  if (!invoice) throw notFound.invoice(number);
  if (invoice.status === 'draft' || invoice.status === 'void')
    throw new ToolError(
      `invoice ${number} is ${invoice.status === 'draft' ? 'a draft, not yet sent' : 'void'}; credit notes apply to issued invoices only`,
    );
  if (invoice.dueCents <= 0)
    throw new ToolError(
      `invoice ${number} has nothing left to pay (status ${invoice.status}); no credit note is possible`,
    );
  if (amountCents > invoice.dueCents)
    throw new ToolError(
      `amount_cents ${amountCents} exceeds the ${money(invoice.dueCents, invoice.currency)} still due on invoice ${number} — at most ${invoice.dueCents}`,
    );
  return invoice;
}

export const issueCreditNote = defineTool({
  name: 'issue_credit_note',
  title: 'Issue credit note',
  description: `Credits amount_cents on invoice invoice_number, reason printed on the note. ${GATED} send_invoice sends unchanged.`,
  scope: 'credits:write',
  input: z.strictObject({
    invoice_number: invoiceNumberArg.describe('e.g. R-2026-0001.'),
    amount_cents: z
      .number()
      .int()
      .min(1)
      .refine((v) => v <= 100_000_000, 'a number <= 100000000')
      .describe('At most the amount due.'),
    reason: textArg(10, 500).describe('Printed on the note.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  icons: icons.credit,
  timeoutMs: 5_000,
  approval: {
    // What the approver weighs: the credit against what is still due. A payment in between refuses it.
    values: async ({ invoice_number, amount_cents }, ctx) => {
      const i = await creditableInvoice(ctx, invoice_number, amount_cents);
      return { customer: i.customerId, currency: i.currency, credit: amount_cents, amount_due: i.dueCents };
    },
    preview: async ({ invoice_number, reason }, ctx, v) => {
      const { customerName } = await creditableInvoice(ctx, invoice_number, v.credit);
      return (
        `Credit ${money(v.credit, v.currency)} on invoice ${invoice_number} of ${quoted(customerName)} (${v.customer}), ` +
        `leaving ${money(v.amount_due - v.credit, v.currency)} of ${money(v.amount_due, v.currency)} due. Reason: ${quoted(reason, 200)}.`
      );
    },
  },
  handler: async ({ invoice_number, reason }, ctx) => {
    if (!ctx.approval) throw new Error('issue_credit_note runs only as an approved action');
    // Read again by the kit just now and found as approved.
    const v = ctx.approval.values;
    const note = await insertCreditNote(ctx.sql, {
      invoiceNumber: invoice_number,
      customerId: v.customer,
      amountCents: v.credit,
      reason,
      approvalId: ctx.approval.id,
    });
    return {
      credit_note_number: note.number,
      invoice_number,
      amount_cents: v.credit,
      due_cents: v.amount_due - v.credit,
    };
  },
});
