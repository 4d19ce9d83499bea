import { defineTool, invoiceNumberArg, ToolError, type ToolContext } from '@bulkhead/core';
import { z } from 'zod';
import { insertCreditNote, lockInvoice } from '../queries.ts';
import { excerpt, GATED, icons, money, notFound } from './shared.ts';

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
  description:
    'Credits amount_cents, at most what is still due, on the issued invoice with this invoice_number; the reason is ' +
    'printed on the note. Executed result: credit_note_number (CN-YYYY-NNNN), invoice_number, amount_cents, due_cents left. ' +
    `send_invoice sends without changing the amount. ${GATED}`,
  scope: 'credits:write',
  input: z.strictObject({
    invoice_number: invoiceNumberArg.describe('Invoice number.'),
    amount_cents: z
      .number()
      .int()
      .min(1)
      .max(100_000_000)
      .describe('Cents to credit, at most the amount due.'),
    reason: z.string().trim().min(10).max(500).describe('Why; printed on the credit note.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  icons: icons.credit,
  timeoutMs: 5_000,
  approval: {
    preview: async ({ invoice_number, amount_cents, reason }, ctx) => {
      const i = await creditableInvoice(ctx, invoice_number, amount_cents);
      return (
        `Credit ${money(amount_cents, i.currency)} on invoice ${i.number} of ${i.customerName} (${i.customerId}), ` +
        `leaving ${money(i.dueCents - amount_cents, i.currency)} of ${money(i.dueCents, i.currency)} due. Reason: "${excerpt(reason, 200)}".`
      );
    },
  },
  handler: async ({ invoice_number, amount_cents, reason }, ctx) => {
    const i = await creditableInvoice(ctx, invoice_number, amount_cents);
    const note = await insertCreditNote(ctx.sql, {
      invoiceNumber: i.number,
      customerId: i.customerId,
      amountCents: amount_cents,
      reason,
      approvalId: ctx.approval?.id ?? null,
    });
    return {
      credit_note_number: note.number,
      invoice_number: i.number,
      amount_cents,
      due_cents: i.dueCents - amount_cents,
    };
  },
});
