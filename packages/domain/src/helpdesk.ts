import type { Sql } from '@bulkhead/db';

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

/** Characters of a body shown in a page of a thread; longer bodies are cut there. */
export const THREAD_BODY_CHARS = 2_000;

/** Characters of a body shown when one message is read alone (`message`). */
export const MESSAGE_BODY_CHARS = 40_000;

/** One message of a ticket. */
export interface TicketMessage {
  /** Its place in the thread, 1 for the first message. */
  n: number;
  authorKind: TicketAuthorKind;
  authorName: string;
  /** The body, or its first characters when it was cut. */
  body: string;
  /** When the body was cut: how many characters were left out and how to read more; otherwise null. */
  bodyCut: string | null;
  createdAt: Date;
}

/** Which part of a thread to read: a page counted back from the newest message, or one message by its `n`. */
export type ThreadSelection = { limit: number; offset: number } | { message: number };

/** A part of a ticket's thread. */
export interface ThreadPage {
  /** In the order they were written. */
  messages: TicketMessage[];
  /** Messages in the whole thread. */
  total: number;
  /** The offset that reads the messages before this page; null when it reaches the first (or one message was read). */
  nextOffset: number | null;
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Reads part of a ticket's thread in one round trip: the `limit` messages
 * before the newest `offset` ones (so offset 0 is the latest page), or the
 * message numbered `message`. Bodies are cut in the database — a page never
 * carries more than {@link THREAD_BODY_CHARS} characters of a body
 * ({@link MESSAGE_BODY_CHARS} for one message) — and a cut body says so in
 * `bodyCut`. Characters are counted as Postgres counts them (code points).
 * The caller has checked that the ticket may be read.
 */
export async function getTicketThread(
  sql: Sql,
  key: string,
  selection: ThreadSelection,
): Promise<ThreadPage> {
  const one = 'message' in selection;
  const bodyChars = one ? MESSAGE_BODY_CHARS : THREAD_BODY_CHARS;
  const rows = await sql<
    {
      total: number;
      n: number | null;
      authorKind: TicketAuthorKind;
      authorName: string;
      body: string;
      chars: number;
      createdAt: Date;
    }[]
  >`
    with numbered as (
      select id, row_number() over (order by id)::int as n from ticket_messages where ticket_key = ${key}
    ), page as (
      select id, n from numbered
      ${
        one
          ? sql`where n = ${selection.message}`
          : sql`order by id desc limit ${selection.limit} offset ${selection.offset}`
      }
    )
    select (select count(*)::int from numbered) as total, page.n, m.author_kind as "authorKind",
      m.author_name as "authorName", left(m.body, ${bodyChars}) as body, length(m.body)::int as chars,
      m.created_at as "createdAt"
    from (select 1) as anchor
    left join (page join ticket_messages m on m.id = page.id) on true
    order by m.id`;
  const total = rows[0]?.total ?? 0;
  const messages = rows
    .filter((r) => r.n !== null)
    .map((r): TicketMessage => {
      const cut = r.chars - bodyChars;
      return {
        n: r.n!,
        authorKind: r.authorKind,
        authorName: r.authorName,
        body: r.body,
        bodyCut:
          cut <= 0
            ? null
            : one
              ? `${count(cut)} more characters not shown: ${count(MESSAGE_BODY_CHARS)} is the most one message returns`
              : `${count(cut)} more characters not shown; message ${r.n} returns up to ${count(MESSAGE_BODY_CHARS)}`,
        createdAt: r.createdAt,
      };
    });
  const end = one ? total : selection.offset + messages.length;
  const older = !one && messages.length > 0 && end < total;
  return { messages, total, nextOffset: older ? end : null };
}
