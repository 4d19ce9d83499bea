import { defineTool, ticketKeyArg, ToolError, type ToolContext } from '@bulkhead/core';
import { z } from 'zod';
import { getCustomerEmail, getTicket, insertAgentAnswer } from '../queries.ts';
import { excerpt, GATED, icons, notFound } from './shared.ts';

/** The name customers see on answers written through this server. */
const AUTHOR = 'Support team';

async function answerableTicket(ctx: ToolContext, key: string, lock: boolean) {
  const ticket = await getTicket(ctx.sql, key, lock);
  if (!ticket) throw notFound.ticket(key);
  if (ticket.status === 'closed')
    throw new ToolError(
      `ticket ${key} is closed and takes no answers — a new request from the customer opens a new ticket`,
    );
  return ticket;
}

export const answerTicket = defineTool({
  name: 'answer_ticket',
  title: 'Answer ticket',
  description:
    'Posts body as an answer on the ticket with this key, shown to the customer and e-mailed to them; the ticket becomes ' +
    'pending (waiting for the customer). Refuses closed tickets. Executed result: key, status, message_number. ' +
    `escalate_ticket involves second level instead. ${GATED}`,
  scope: 'tickets:write',
  input: z.strictObject({
    key: ticketKeyArg.describe('Ticket key.'),
    body: z.string().trim().min(1).max(5000).describe('The answer as the customer will read it.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  icons: icons.answer,
  timeoutMs: 5_000,
  approval: {
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
    // The customer also gets the answer by e-mail, after the commit.
    await ctx.outbox.enqueue('email', {
      to: await getCustomerEmail(ctx.sql, t.customerId),
      subject: `Re: [${key}] ${t.subject}`,
      text: body,
      ticket_key: key,
      customer_id: t.customerId,
    });
    return { key, status: 'pending', message_number: n };
  },
});
