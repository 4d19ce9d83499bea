import { textArg, defineTool, emailMessage, ToolError, type ToolContext } from '@bulkhead/core';
import { ticketKeyArg } from '@bulkhead/domain';
import { z } from 'zod';
import { getCustomerEmail, getTicket, insertAgentAnswer } from '../queries.ts';
import { excerpt, GATED, icons, mailableAddress, notFound } from './shared.ts';

/** The name customers see on answers written through this server. */
const AUTHOR = 'Support team';

async function answerableTicket(ctx: ToolContext, key: string, lock: boolean) {
  const ticket = await getTicket(ctx.sql, key, lock);
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
    preview: async ({ key, body }, ctx) => {
      const t = await answerableTicket(ctx, key, false);
      return (
        `Answer ticket ${key} ("${excerpt(t.subject, 60)}") of ${t.customerName} (${t.customerId}), visible to the customer, ` +
        `and set it to pending: "${excerpt(body)}" (${body.length} characters).`
      );
    },
  },
  handler: async ({ key, body }, ctx) => {
    if (!ctx.outbox) throw new Error('answer_ticket runs only as an approved action');
    const t = await answerableTicket(ctx, key, true);
    const { n } = await insertAgentAnswer(ctx.sql, { key, author: AUTHOR, body });
    // The customer also gets the answer by e-mail, after the commit; the subject is the customer's text, flattened to one line.
    await ctx.outbox.enqueue(
      'email',
      emailMessage({
        to: t.email,
        subject: `Re: [${key}] ${t.subject}`,
        text: body,
        ticket_key: key,
        customer_id: t.customerId,
      }),
    );
    return { key, status: 'pending', message_number: n };
  },
});
