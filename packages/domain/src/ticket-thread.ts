import { untrusted, untrustedTextRef } from '@bulkhead/core';
import { z } from 'zod';
import { TICKET_AUTHOR_KINDS, type ThreadPage } from './helpdesk.ts';

/** One message of a ticket's thread as a tool returns it. */
export const ticketMessageOutput = z.object({
  n: z.number(),
  author_kind: z.enum(TICKET_AUTHOR_KINDS),
  author_name: untrustedTextRef,
  created_at: z.string(),
  body: untrustedTextRef,
  body_cut: z.string().optional(),
});

/**
 * A page of a ticket's thread as a tool returns it: the fields a tool's output object spreads in
 * beside its own fields of the ticket.
 */
export const ticketThreadOutput = {
  messages: z.array(ticketMessageOutput),
  messages_total: z.number(),
  truncated: z.boolean(),
  next_offset: z.number().nullable(),
};

/** The result fields of {@link ticketThreadOutput}. */
export type TicketThreadResult = z.infer<z.ZodObject<typeof ticketThreadOutput>>;

/**
 * The result fields of a page of ticket `key`'s thread: the author's name and the body of every message
 * are text people wrote, returned as untrusted text naming the message they came from.
 */
export function ticketThreadResult(key: string, page: ThreadPage): TicketThreadResult {
  return {
    messages: page.messages.map((m) => ({
      n: m.n,
      author_kind: m.authorKind,
      author_name: untrusted(m.authorName, { source: `ticket ${key} message ${m.n} author` }),
      created_at: m.createdAt.toISOString(),
      body: untrusted(m.body, { source: `ticket ${key} message ${m.n}` }),
      ...(m.bodyCut ? { body_cut: m.bodyCut } : {}),
    })),
    messages_total: page.total,
    truncated: page.nextOffset !== null,
    next_offset: page.nextOffset,
  };
}
