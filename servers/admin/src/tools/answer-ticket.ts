import { textArg, defineTool, emailMessage, quoted, ToolError, type ToolContext } from '@bulkhead/core';
import { ticketKeyArg } from '@bulkhead/domain';
import { z } from 'zod';
import { getCustomerEmail, getTicket, insertAgentAnswer } from '../queries.ts';
import { GATED, icons, mailableAddress, notFound } from './shared.ts';

/** The name customers see on answers written through this server. */
const AUTHOR = 'Support team';

async function answerableTicket(ctx: ToolContext, key: string) {
  const ticket = await getTicket(ctx.sql, key, true);
  if (!ticket) throw notFound.ticket(key);
  if (ticket.status === 'closed')
    throw new ToolError(
      `ticket ${key} is closed and takes no answers — a new request from the customer opens a new ticket`,
    );
  // Checked before a person is asked, and again when the answer goes out.
  const email = mailableAddress(ticket.customerId, await getCustomerEmail(ctx.sql, ticket.customerId));
  return { ...ticket, email };
}

export const answerTicket = defineTool({
  name: 'answer_ticket',
  title: 'Answer ticket',
  description: `Posts body as an answer on ticket key, shown and e-mailed to the customer; it becomes pending; closed refused. ${GATED} escalate_ticket hands on.`,
  scope: 'tickets:write',
  input: z.strictObject({
    key: ticketKeyArg.describe('e.g. T-1001.'),
    body: textArg(1, 5000).describe('Shown to the customer.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  icons: icons.answer,
  timeoutMs: 5_000,
  approval: {
    sends: ['email'],
    // The e-mail as it will leave (subject flattened to one line): the address on file is read when
    // the call is filed and again when it runs, and a change in between refuses the answer.
    values: async ({ key, body }, ctx) => {
      const t = await answerableTicket(ctx, key);
      const mail = emailMessage({ to: t.email, subject: `Re: [${key}] ${t.subject}`, text: body });
      return { customer: t.customerId, recipient: mail.to, subject: mail.subject, body: mail.text };
    },
    preview: async ({ key }, ctx, v) => {
      const t = await answerableTicket(ctx, key);
      return (
        `Answer ticket ${key} of ${quoted(t.customerName)} (${v.customer}), visible to the customer, set it to pending, ` +
        `and e-mail the answer to ${quoted(v.recipient)} with the subject ${quoted(v.subject)}: ` +
        `${quoted(v.body, 80)} (${v.body.length} characters).`
      );
    },
  },
  handler: async ({ key }, ctx) => {
    if (!ctx.outbox || !ctx.approval) throw new Error('answer_ticket runs only as an approved action');
    // Checked by the kit just now: the ticket takes answers and these are the e-mail's values as approved.
    const v = ctx.approval.values;
    const { n } = await insertAgentAnswer(ctx.sql, { key, author: AUTHOR, body: v.body });
    // The customer also gets the answer by e-mail, after the commit.
    await ctx.outbox.enqueue(
      'email',
      emailMessage({
        to: v.recipient,
        subject: v.subject,
        text: v.body,
        ticket_key: key,
        customer_id: v.customer,
      }),
    );
    return { key, status: 'pending', message_number: n };
  },
});
