import { defineTool, emailMessage, quoted, ToolError, type ToolContext } from '@bulkhead/core';
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

/** The e-mail and the change as they will happen: read when the call is filed and again when it runs. */
async function invoiceMail(ctx: ToolContext, number: string) {
  const i = await sendableInvoice(ctx, number);
  const mail = emailMessage({
    to: i.email,
    subject: `Invoice ${i.number}`,
    text:
      `Dear ${i.customerName},\n\nplease find invoice ${i.number} over ${money(i.totalCents, i.currency)} attached; ` +
      `${money(i.dueCents, i.currency)} are due on ${i.dueOn}.\n`,
  });
  return {
    customer: i.customerId,
    invoice_status: i.status,
    recipient: mail.to,
    subject: mail.subject,
    email_text: mail.text,
  };
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
    // Address, amounts and due date are read again when the approved action runs: any change refuses it.
    values: async ({ invoice_number }, ctx) => invoiceMail(ctx, invoice_number),
    preview: async ({ invoice_number }, ctx, v) => {
      const i = await sendableInvoice(ctx, invoice_number);
      const draft = v.invoice_status === 'draft' ? ' (a draft: it becomes open)' : '';
      return (
        `Send invoice ${i.number}${draft} over ${money(i.totalCents, i.currency)}, ${money(i.dueCents, i.currency)} due on ${i.dueOn}, ` +
        `to ${quoted(i.customerName)} (${v.customer}) at ${quoted(v.recipient)}, subject ${quoted(v.subject)}.`
      );
    },
  },
  handler: async ({ invoice_number }, ctx) => {
    if (!ctx.outbox || !ctx.approval) throw new Error('send_invoice runs only as an approved action');
    // The kit has just read these again and found them as approved: the e-mail is built from them.
    const v = ctx.approval.values;
    const { sentAt } = await markInvoiceSent(ctx.sql, invoice_number);
    // The e-mail leaves after the commit, and only if the update above commits too.
    await ctx.outbox.enqueue(
      'email',
      emailMessage({
        to: v.recipient,
        subject: v.subject,
        text: v.email_text,
        invoice_number,
        customer_id: v.customer,
      }),
    );
    return { invoice_number, status: 'open', email: v.recipient, sent_at: sentAt.toISOString() };
  },
});
