import { textArg, defineTool, ToolError, type ToolContext } from '@bulkhead/core';
import { invoiceNumberArg } from '@bulkhead/domain';
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
