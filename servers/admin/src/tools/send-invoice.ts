import { defineTool, emailMessage, ToolError, type ToolContext } from '@bulkhead/core';
import { invoiceNumberArg } from '@bulkhead/domain';
import { z } from 'zod';
import { lockInvoice, markInvoiceSent } from '../queries.ts';
import { GATED, icons, mailableAddress, money, notFound } from './shared.ts';

async function sendableInvoice(ctx: ToolContext, number: string) {
  const invoice = await lockInvoice(ctx.sql, number);
  if (!invoice) throw notFound.invoice(number);
  if (invoice.status === 'paid' || invoice.status === 'void')
    throw new ToolError(`invoice ${number} is ${invoice.status}; only draft or open invoices can be sent`);
  mailableAddress(invoice.customerId, invoice.email);
  return invoice;
}

type SendableInvoice = Awaited<ReturnType<typeof sendableInvoice>>;

/** The sentence a person approves; it ends with the recipient, which {@link approvedRecipient} reads back. */
function previewOf(i: SendableInvoice): string {
  const draft = i.status === 'draft' ? ' (a draft: it becomes open)' : '';
  return (
    `Send invoice ${i.number}${draft} over ${money(i.totalCents, i.currency)}, ${money(i.dueCents, i.currency)} due on ${i.dueOn}, ` +
    `to ${i.customerName} (${i.customerId}) at ${i.email}.`
  );
}

/** The address the approved preview named (its last words, "at <address>."). */
function approvedRecipient(preview: string): string | undefined {
  return / at (\S+)\.$/.exec(preview)?.[1];
}

export const sendInvoice = defineTool({
  name: 'send_invoice',
  title: 'Send invoice',
  description: `E-mails invoice invoice_number to the customer: a draft becomes open, an open one a reminder; paid or void refused. ${GATED} issue_credit_note lowers it.`,
  scope: 'invoices:write',
  input: z.strictObject({ invoice_number: invoiceNumberArg.describe('e.g. R-2026-0001.') }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  icons: icons.send,
  timeoutMs: 5_000,
  approval: {
    sends: ['email'],
    preview: async ({ invoice_number }, ctx) => previewOf(await sendableInvoice(ctx, invoice_number)),
  },
  handler: async ({ invoice_number }, ctx) => {
    if (!ctx.outbox || !ctx.approval) throw new Error('send_invoice runs only as an approved action');
    const i = await sendableInvoice(ctx, invoice_number);
    // The person approved sending to the address in the preview; the one on file may have changed since.
    const approved = approvedRecipient(ctx.approval.preview);
    if (approved !== i.email)
      throw new ToolError(
        `the e-mail address of customer ${i.customerId} changed since approval (approved: ${approved ?? 'none'}, now: ${i.email}); ` +
          'nothing was sent — call send_invoice again so that a person approves the new address',
      );
    const { sentAt } = await markInvoiceSent(ctx.sql, i.number);
    // The e-mail leaves after the commit, and only if the update above commits too.
    await ctx.outbox.enqueue(
      'email',
      emailMessage({
        to: i.email,
        subject: `Invoice ${i.number}`,
        text:
          `Dear ${i.customerName},\n\nplease find invoice ${i.number} over ${money(i.totalCents, i.currency)} attached; ` +
          `${money(i.dueCents, i.currency)} are due on ${i.dueOn}.\n`,
        invoice_number: i.number,
        customer_id: i.customerId,
      }),
    );
    return { invoice_number: i.number, status: 'open', email: i.email, sent_at: sentAt.toISOString() };
  },
});
