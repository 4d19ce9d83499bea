import type { Sql } from './connect.ts';

// The helpdesk tables of migration 0005 as every server reads them: the admin server
// for the whole helpdesk, the customer server for one customer's own tickets.

/** A ticket's states, as the `tickets.status` check allows them. */
export const TICKET_STATUSES = ['open', 'pending', 'escalated', 'resolved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];

/** A ticket's categories, as the `tickets.category` check allows them (null: not yet categorised). */
export const TICKET_CATEGORIES = ['question', 'incident', 'billing', 'legal', 'spam'] as const;
export type TicketCategory = (typeof TICKET_CATEGORIES)[number];

/** Who wrote a message, as the `ticket_messages.author_kind` check allows it. */
export const TICKET_AUTHOR_KINDS = ['customer', 'agent', 'system'] as const;
export type TicketAuthorKind = (typeof TICKET_AUTHOR_KINDS)[number];

/** One message of a ticket. */
export interface TicketMessage {
  /** Its place in the thread, 1 for the first message. */
  n: number;
  authorKind: TicketAuthorKind;
  authorName: string;
  body: string;
  createdAt: Date;
}

/**
 * The latest `limit` messages of a ticket in the order they were written, and
 * how many there are. The caller has checked that the ticket may be read.
 */
export async function getTicketMessages(
  sql: Sql,
  key: string,
  limit: number,
): Promise<{ messages: TicketMessage[]; total: number }> {
  const rows = await sql<(TicketMessage & { total: number })[]>`
    select * from (
      select id, row_number() over (order by id)::int as n, author_kind as "authorKind",
        author_name as "authorName", body, created_at as "createdAt", count(*) over ()::int as total
      from ticket_messages where ticket_key = ${key}
      order by id desc limit ${limit}
    ) latest order by id`;
  return {
    messages: rows.map((r) => ({
      n: r.n,
      authorKind: r.authorKind,
      authorName: r.authorName,
      body: r.body,
      createdAt: r.createdAt,
    })),
    total: rows[0]?.total ?? 0,
  };
}
