import type { Sql } from '@bulkhead/core';
import type { TicketCategory, TicketStatus } from '@bulkhead/domain';

// Amounts are bigint cents in the database; postgres.js returns int8 and numeric as strings,
// so they are cast to float8 here (exact for integers below 2^53, i.e. any real invoice).

/** The stored states of an invoice. */
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void'] as const;
/** What list_invoices filters and reports: the stored states plus the derived "overdue" (open and past due). */
export const INVOICE_STATES = ['draft', 'open', 'overdue', 'paid', 'void'] as const;
export type InvoiceState = (typeof INVOICE_STATES)[number];

/** Ticket statuses that still need work; "open tickets" in counts means these. */
const UNRESOLVED = ['open', 'pending', 'escalated'];

/** The short form of a customer in search results. */
export interface CustomerHit {
  id: string;
  name: string;
  email: string;
  city: string | null;
  openInvoices: number;
  openTickets: number;
}

/** Customers whose id, name or e-mail contains `query` (case-insensitive); an exact id comes first. */
export async function findCustomers(
  sql: Sql,
  { query, limit }: { query: string; limit: number },
): Promise<CustomerHit[]> {
  // strpos instead of LIKE: the query is a plain fragment, "%" and "_" in it are not wildcards.
  const q = query.toLowerCase();
  return sql<CustomerHit[]>`
    select c.id, c.name, c.email, c.city,
      (select count(*) from invoices i where i.customer_id = c.id and i.status = 'open')::int as "openInvoices",
      (select count(*) from tickets t where t.customer_id = c.id and t.status in ${sql(UNRESOLVED)})::int as "openTickets"
    from customers c
    where strpos(lower(c.id), ${q}) > 0 or strpos(lower(c.name), ${q}) > 0 or strpos(lower(c.email), ${q}) > 0
    order by lower(c.id) = ${q} desc, lower(c.name), c.id
    limit ${limit}`;
}

/** One customer with balance and counts. */
export interface CustomerDetail {
  id: string;
  name: string;
  email: string;
  phone: string | null;
  street: string | null;
  postalCode: string | null;
  city: string | null;
  country: string;
  language: 'en' | 'de';
  dueCents: number;
  overdueCents: number;
  openInvoices: number;
  overdueInvoices: number;
  openTickets: number;
}

/** A customer with what they owe (open invoices, overdue part) and how many tickets are unresolved. */
export async function getCustomer(sql: Sql, id: string): Promise<CustomerDetail | undefined> {
  const [row] = await sql<CustomerDetail[]>`
    select c.id, c.name, c.email, c.phone, c.street, c.postal_code as "postalCode", c.city, c.country, c.language,
      coalesce(b.due, 0)::float8 as "dueCents", coalesce(b.overdue, 0)::float8 as "overdueCents",
      coalesce(b.open, 0)::int as "openInvoices", coalesce(b.overdue_count, 0)::int as "overdueInvoices",
      (select count(*) from tickets t where t.customer_id = c.id and t.status in ${sql(UNRESOLVED)})::int as "openTickets"
    from customers c
    left join lateral (
      select sum(due_cents) as due, sum(due_cents) filter (where status = 'overdue') as overdue,
        count(*) as open, count(*) filter (where status = 'overdue') as overdue_count
      from invoice_balances where customer_id = c.id and status in ('open', 'overdue')
    ) b on true
    where c.id = ${id}`;
  return row;
}

/** The contact fields update_customer_contact may change, under their column names. */
export interface ContactFields {
  email?: string | undefined;
  phone?: string | undefined;
  street?: string | undefined;
  postal_code?: string | undefined;
  city?: string | undefined;
}

/** A customer's name and contact fields, locked for update when run inside a transaction. */
export async function lockCustomerContact(
  sql: Sql,
  id: string,
): Promise<
  ({ id: string; name: string } & Required<{ [K in keyof ContactFields]: string | null }>) | undefined
> {
  const [row] = await sql<
    ({ id: string; name: string } & Required<{ [K in keyof ContactFields]: string | null }>)[]
  >`
    select id, name, email, phone, street, postal_code, city from customers where id = ${id} for update`;
  return row;
}

/** Sets the given contact fields (and only those) of a customer. */
export async function updateCustomerContact(sql: Sql, id: string, fields: ContactFields): Promise<void> {
  const set = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  await sql`update customers set ${sql(set)}, updated_at = now() where id = ${id}`;
}

/** The address invoices and answers go to. */
export async function getCustomerEmail(sql: Sql, id: string): Promise<string> {
  const [row] = await sql<{ email: string }[]>`select email from customers where id = ${id}`;
  return row!.email;
}

export async function customerExists(sql: Sql, id: string): Promise<boolean> {
  const [row] = await sql`select 1 from customers where id = ${id}`;
  return row !== undefined;
}

/** One invoice as lists show it. */
export interface InvoiceRow {
  number: string;
  customerId: string;
  status: InvoiceState;
  issuedOn: string;
  dueOn: string;
  currency: string;
  totalCents: number;
  dueCents: number;
}

/** Filters of {@link listInvoices}. */
export interface InvoiceFilter {
  customerId: string | undefined;
  /** `open` means not settled, so it includes the overdue ones (reported as `overdue`). */
  status: InvoiceState | undefined;
  /** `YYYY` or `YYYY-MM`: invoices issued in that year or month. */
  period: string | undefined;
}

function invoiceWhere(sql: Sql, filter: InvoiceFilter) {
  const from = filter.period ? `${filter.period}${filter.period.length === 4 ? '-01-01' : '-01'}` : null;
  const step = filter.period?.length === 4 ? '1 year' : '1 month';
  return sql`
    where true
      ${filter.customerId ? sql`and customer_id = ${filter.customerId}` : sql``}
      ${filter.status === 'open' ? sql`and status in ('open', 'overdue')` : filter.status ? sql`and status = ${filter.status}` : sql``}
      ${from ? sql`and issued_on >= ${from}::date and issued_on < ${from}::date + ${step}::interval` : sql``}`;
}

/** A page of invoices, newest first, and how many match in all. */
export async function listInvoices(
  sql: Sql,
  f: InvoiceFilter & { limit: number; offset: number },
): Promise<{ rows: InvoiceRow[]; total: number }> {
  const rows = await sql<InvoiceRow[]>`
    select invoice_number as number, customer_id as "customerId", status,
      to_char(issued_on, 'YYYY-MM-DD') as "issuedOn", to_char(due_on, 'YYYY-MM-DD') as "dueOn",
      currency, total_cents::float8 as "totalCents", due_cents::float8 as "dueCents"
    from invoice_balances
    ${invoiceWhere(sql, f)}
    order by issued_on desc, invoice_number desc
    limit ${f.limit} offset ${f.offset}`;
  const [count] = await sql<
    { n: number }[]
  >`select count(*)::int as n from invoice_balances ${invoiceWhere(sql, f)}`;
  return { rows, total: count?.n ?? 0 };
}

/** An invoice with its customer, locked for update when run inside a transaction. */
export interface InvoiceForAction {
  number: string;
  customerId: string;
  customerName: string;
  email: string;
  status: InvoiceState;
  dueOn: string;
  currency: string;
  totalCents: number;
  dueCents: number;
}

export async function lockInvoice(sql: Sql, number: string): Promise<InvoiceForAction | undefined> {
  const [row] = await sql<InvoiceForAction[]>`
    select b.invoice_number as number, b.customer_id as "customerId", c.name as "customerName", c.email,
      b.status, to_char(b.due_on, 'YYYY-MM-DD') as "dueOn", b.currency,
      b.total_cents::float8 as "totalCents", b.due_cents::float8 as "dueCents"
    from invoices i
    join invoice_balances b on b.invoice_number = i.number
    join customers c on c.id = i.customer_id
    where i.number = ${number}
    for update of i`;
  return row;
}

/** Marks an invoice sent now; a draft becomes open. */
export async function markInvoiceSent(sql: Sql, number: string): Promise<{ sentAt: Date }> {
  const [row] = await sql<{ sentAt: Date }[]>`
    update invoices set sent_at = now(), status = case when status = 'draft' then 'open' else status end
    where number = ${number}
    returning sent_at as "sentAt"`;
  return row!;
}

/** Inserts a credit note numbered CN-<year>-NNNN from credit_note_seq. */
export async function insertCreditNote(
  sql: Sql,
  n: {
    invoiceNumber: string;
    customerId: string;
    amountCents: number;
    reason: string;
    approvalId: string | null;
  },
): Promise<{ number: string }> {
  const [row] = await sql<{ number: string }[]>`
    insert into credit_notes (number, invoice_number, customer_id, amount_cents, reason, approval_id)
    select 'CN-' || to_char(now(), 'YYYY') || '-' || lpad(seq::text, greatest(4, length(seq::text)), '0'),
      ${n.invoiceNumber}, ${n.customerId}, ${n.amountCents}, ${n.reason}, ${n.approvalId}
    from nextval('credit_note_seq') as seq
    returning number`;
  return row!;
}

/** One ticket as lists show it: never its messages. */
export interface TicketRow {
  key: string;
  subject: string;
  customerId: string;
  sender: string;
  receivedAt: Date;
  category: TicketCategory | null;
  status: TicketStatus;
}

/** Filters of {@link listTickets}; `uncategorized` matches category null. */
export interface TicketFilter {
  status: TicketStatus | undefined;
  category: TicketCategory | 'uncategorized' | undefined;
  customerId: string | undefined;
}

function ticketWhere(sql: Sql, filter: TicketFilter) {
  return sql`
    where true
      ${filter.status ? sql`and t.status = ${filter.status}` : sql``}
      ${filter.category === 'uncategorized' ? sql`and t.category is null` : filter.category ? sql`and t.category = ${filter.category}` : sql``}
      ${filter.customerId ? sql`and t.customer_id = ${filter.customerId}` : sql``}`;
}

/** A page of tickets, newest first, and how many match in all. */
export async function listTickets(
  sql: Sql,
  f: TicketFilter & { limit: number; offset: number },
): Promise<{ rows: TicketRow[]; total: number }> {
  const rows = await sql<TicketRow[]>`
    select t.key, t.subject, t.customer_id as "customerId", c.name as sender, t.created_at as "receivedAt",
      t.category, t.status
    from tickets t join customers c on c.id = t.customer_id
    ${ticketWhere(sql, f)}
    order by t.created_at desc, t.key desc
    limit ${f.limit} offset ${f.offset}`;
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from tickets t ${ticketWhere(sql, f)}`;
  return { rows, total: count?.n ?? 0 };
}

/** A ticket's header with its customer. */
export interface TicketDetail {
  key: string;
  customerId: string;
  customerName: string;
  subject: string;
  category: TicketCategory | null;
  status: TicketStatus;
  receivedAt: Date;
  updatedAt: Date;
  escalatedAt: Date | null;
  escalationReason: string | null;
}

/** A ticket's header; with `lock`, the row stays locked until the surrounding transaction ends. */
export async function getTicket(sql: Sql, key: string, lock = false): Promise<TicketDetail | undefined> {
  const [row] = await sql<TicketDetail[]>`
    select t.key, t.customer_id as "customerId", c.name as "customerName", t.subject, t.category, t.status,
      t.created_at as "receivedAt", t.updated_at as "updatedAt", t.escalated_at as "escalatedAt",
      t.escalation_reason as "escalationReason"
    from tickets t join customers c on c.id = t.customer_id
    where t.key = ${key}
    ${lock ? sql`for update of t` : sql``}`;
  return row;
}

/** Sets a ticket's category in one statement; undefined when there is no such ticket. */
export async function setTicketCategory(
  sql: Sql,
  key: string,
  category: TicketCategory,
): Promise<{ previous: TicketCategory | null } | undefined> {
  const [row] = await sql<{ previous: TicketCategory | null }[]>`
    with old as (select key, category from tickets where key = ${key} for update)
    update tickets t
    set category = ${category},
      updated_at = case when old.category is distinct from ${category} then now() else t.updated_at end
    from old where t.key = old.key
    returning old.category as previous`;
  return row;
}

/** What the customer reads in the thread, in their language, when a ticket is escalated; the reason stays internal. */
export const ESCALATION_NOTICE = {
  en: 'Your ticket has been passed on to our second-level support.',
  de: 'Ihr Ticket wurde an unseren Second-Level-Support weitergegeben.',
} as const;

/**
 * Escalates a ticket unless it is closed or already escalated, in one statement,
 * and notes it in the thread the way the helpdesk always has (a system message).
 * Returns the status it had, and whether it was changed.
 */
export async function escalateTicket(
  sql: Sql,
  key: string,
  reason: string,
): Promise<{ previous: TicketStatus; escalatedAt: Date | null; changed: boolean } | undefined> {
  const [row] = await sql<{ previous: TicketStatus; escalatedAt: Date | null; changed: boolean }[]>`
    with old as (select key, status, escalated_at from tickets where key = ${key} for update),
    changed as (
      update tickets t set status = 'escalated', escalation_reason = ${reason}, escalated_at = now(), updated_at = now()
      from old where t.key = old.key and old.status not in ('closed', 'escalated')
      returning t.key, t.escalated_at
    ),
    noted as (
      insert into ticket_messages (ticket_key, author_kind, author_name, body)
      select changed.key, 'system', 'helpdesk',
        case c.language when 'de' then ${ESCALATION_NOTICE.de} else ${ESCALATION_NOTICE.en} end
      from changed join tickets t on t.key = changed.key join customers c on c.id = t.customer_id
    )
    select old.status as previous, coalesce(changed.escalated_at, old.escalated_at) as "escalatedAt",
      changed.key is not null as changed
    from old left join changed on changed.key = old.key`;
  return row;
}

/** Adds an agent's answer to a ticket and hands the turn to the customer (status pending); returns its place in the thread. */
export async function insertAgentAnswer(
  sql: Sql,
  { key, author, body }: { key: string; author: string; body: string },
): Promise<{ n: number }> {
  // The statement's snapshot does not see the new row, so the count before it plus one is its place.
  const [row] = await sql<{ n: number }[]>`
    with msg as (
      insert into ticket_messages (ticket_key, author_kind, author_name, body)
      values (${key}, 'agent', ${author}, ${body})
    ), t as (
      update tickets set status = 'pending', updated_at = now() where key = ${key}
    )
    select count(*)::int + 1 as n from ticket_messages where ticket_key = ${key}`;
  return row!;
}
