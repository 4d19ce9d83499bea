import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '@bulkhead/db';
import { createTestDatabase, type TestDatabase } from '@bulkhead/db/testing';
import { DEMO_INJECTION_TICKETS, seedDemo } from './index.ts';

const TABLES = {
  customers: 'id',
  invoices: 'number',
  invoice_lines: 'invoice_number, line_no',
  payments: 'id',
  credit_notes: 'number',
  tickets: 'key',
  ticket_messages: 'ticket_key, created_at, id',
} as const;

/** One md5 per table over every column of every row, in key order. */
async function digests(sql: Sql): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [table, order] of Object.entries(TABLES)) {
    const [row] = await sql.unsafe<{ digest: string }[]>(
      `select md5(coalesce(string_agg(t::text, '|' order by ${order}), '')) as digest from ${table} t`,
    );
    out[table] = row!.digest;
  }
  return out;
}

async function counts(sql: Sql): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of Object.keys(TABLES)) {
    const [row] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table}`);
    out[table] = row!.n;
  }
  return out;
}

let a: TestDatabase;
let b: TestDatabase;

beforeAll(async () => {
  [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
});
afterAll(async () => {
  await Promise.all([a?.drop(), b?.drop()]);
});

describe('seedDemo', () => {
  it('inserts the announced data set, in one transaction (its speed is measured by pnpm bench)', async () => {
    const lines: string[] = [];
    const result = await seedDemo(a.sql, { progress: (l) => lines.push(l) });
    // Every row of every table was written by the one transaction: all-or-nothing, one commit.
    const [xacts] = await a.sql.unsafe<{ n: number }[]>(
      `select count(distinct x)::int as n from (${Object.keys(TABLES)
        .map((t) => `select xmin::text as x from ${t}`)
        .join(' union all ')}) rows`,
    );
    expect(xacts!.n).toBe(1);
    expect(result.inserted).toEqual(result.dataset);
    expect(result.dataset).toMatchObject({ customers: 50, invoices: 500, tickets: 300 });
    expect(await counts(a.sql)).toEqual(result.dataset);
    expect(lines[0]).toBe('customers: 50');
    const [ids] = await a.sql`
      select min(id) as first_customer, max(id) as last_customer,
        (select min(number) from invoices) as first_invoice, (select max(number) from invoices) as last_invoice,
        (select min(key) from tickets) as first_ticket, (select max(key) from tickets) as last_ticket
      from customers`;
    expect(ids).toEqual({
      first_customer: 'C-1001',
      last_customer: 'C-1050',
      first_invoice: 'R-2026-0001',
      last_invoice: 'R-2026-0500',
      first_ticket: 'T-1001',
      last_ticket: 'T-1300',
    });
  });

  it('is deterministic: two fresh databases hold identical rows', async () => {
    await seedDemo(b.sql);
    expect(await digests(b.sql)).toEqual(await digests(a.sql));
  });

  it('gives a different data set for a different seed', async () => {
    const c = await createTestDatabase();
    try {
      await seedDemo(c.sql, { seed: 7 });
      const [x, y] = [await digests(c.sql), await digests(a.sql)];
      expect(x.invoices).not.toBe(y.invoices);
      expect(x.customers).not.toBe(y.customers);
    } finally {
      await c.drop();
    }
  });

  it('is idempotent and leaves rows the user created alone', async () => {
    const before = await digests(a.sql);
    await a.sql`insert into customers (id, name, email) values ('C-2001', 'Own Customer Ltd', 'own@example.com')`;
    await a.sql`update customers set name = 'Renamed by the user' where id = 'C-1001'`;
    const again = await seedDemo(a.sql);
    expect(again.inserted).toEqual({
      customers: 0,
      invoices: 0,
      invoice_lines: 0,
      payments: 0,
      credit_notes: 0,
      tickets: 0,
      ticket_messages: 0,
    });
    expect((await counts(a.sql)).customers).toBe(51);
    const [c1001] = await a.sql`select name from customers where id = 'C-1001'`;
    expect(c1001!.name).toBe('Renamed by the user');
    const after = await digests(a.sql);
    expect(after.invoices).toBe(before.invoices);
    expect(after.tickets).toBe(before.tickets);
    expect(after.ticket_messages).toBe(before.ticket_messages);
  });

  it('moves the ticket and credit note sequences past the demo numbers', async () => {
    const [t] = await b.sql`select nextval('ticket_key_seq')::int as n`;
    expect(t!.n).toBe(5001);
    const [max] = await b.sql`select max(substring(number from 9)::int) as m from credit_notes`;
    const [c] = await b.sql`select nextval('credit_note_seq')::int as n`;
    expect(c!.n).toBe(max!.m + 1);
  });

  it('keeps invoices consistent: totals are the sum of lines, paid means fully settled', async () => {
    const bad = await a.sql`
      select i.number from invoices i
      where i.total_cents <> (select sum(amount_cents) from invoice_lines l where l.invoice_number = i.number)
         or (i.status = 'paid' and i.total_cents <> coalesce((select sum(amount_cents) from payments p where p.invoice_number = i.number), 0)
              + coalesce((select sum(amount_cents) from credit_notes c where c.invoice_number = i.number), 0))
         or (i.status = 'open' and i.total_cents <= coalesce((select sum(amount_cents) from payments p where p.invoice_number = i.number), 0)
              + coalesce((select sum(amount_cents) from credit_notes c where c.invoice_number = i.number), 0))`;
    expect(bad).toEqual([]);
    const states =
      await a.sql`select status, count(*)::int as n from invoices group by status order by status`;
    expect(states.map((r) => r.status)).toEqual(['draft', 'open', 'paid', 'void']);
    const [ages] = await a.sql`
      select count(*) filter (where due_on < '2026-11-20' and due_on >= '2026-10-20')::int as recent,
        count(*) filter (where due_on < '2026-06-01')::int as old,
        count(*) filter (where due_on > '2027-12-31')::int as future,
        count(*) filter (where exists (select 1 from payments p where p.invoice_number = i.number))::int as partly_paid
      from invoices i where status = 'open'`;
    expect(ages!.recent).toBeGreaterThan(5);
    expect(ages!.old).toBeGreaterThan(5);
    expect(ages!.future).toBe(6);
    expect(ages!.partly_paid).toBeGreaterThan(5);
  });

  it('has tickets in every status and category, some uncategorised, German ones and injection attempts', async () => {
    const statuses = await a.sql`select distinct status from tickets order by status`;
    expect(statuses.map((r) => r.status)).toEqual(['closed', 'escalated', 'open', 'pending', 'resolved']);
    const categories = await a.sql`select distinct category from tickets order by category nulls last`;
    expect(categories.map((r) => r.category)).toEqual([
      'billing',
      'incident',
      'legal',
      'question',
      'spam',
      null,
    ]);
    const [german] = await a.sql`
      select count(*)::int as n from tickets t join customers c on c.id = t.customer_id where c.language = 'de'`;
    expect(german!.n).toBeGreaterThanOrEqual(30);
    expect(german!.n).toBeLessThanOrEqual(60);
    const injected = await a.sql`
      select distinct ticket_key from ticket_messages
      where body ~* 'ignore your instructions|ignoriere alle|^SYSTEM:|authorised you' or body ~ '\u200b'
      order by ticket_key`;
    expect(injected.map((r) => r.ticket_key)).toEqual([...DEMO_INJECTION_TICKETS].sort());
    expect(DEMO_INJECTION_TICKETS.length).toBeGreaterThanOrEqual(5);
    const [hidden] = await a.sql`select count(*)::int as n from ticket_messages where body ~ '\u200b'`;
    expect(hidden!.n).toBe(1);
    const authors = await a.sql`select distinct author_kind from ticket_messages order by 1`;
    expect(authors.map((r) => r.author_kind)).toEqual(['agent', 'customer', 'system']);
  });
});
