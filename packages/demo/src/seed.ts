import type { Sql } from '@bulkhead/db';
import { DEMO_SEED, generateDemoData, type DemoData } from './generate.ts';

/** Options for {@link seedDemo}. */
export interface SeedDemoOptions {
  /** The PRNG seed (default {@link DEMO_SEED}); the data set is a pure function of it. */
  seed?: number;
  /** Called before each table with a short line ("invoices: 500 rows"). */
  progress?: (line: string) => void;
}

/** Rows per table. */
export interface DemoCounts {
  customers: number;
  invoices: number;
  invoice_lines: number;
  payments: number;
  credit_notes: number;
  tickets: number;
  ticket_messages: number;
}

/** What {@link seedDemo} did: rows it inserted, and rows the data set has (inserted or already there). */
export interface SeedDemoResult {
  seed: number;
  inserted: DemoCounts;
  dataset: DemoCounts;
}

const LOCK_KEY = 0x6465_6d6f; // "demo": two seeding processes wait for each other instead of racing

/**
 * Inserts the demo data set: about 50 customers (C-1001…), 500 invoices
 * (R-2026-0001…) with lines, payments and credit notes, 300 tickets (T-1001…)
 * with messages. Idempotent and non-destructive: rows are keyed by their ids and
 * an existing row is never touched; children (lines, payments, messages) are
 * only added under a parent inserted in the same run, so data the user created
 * under a colliding id stays as it was. One transaction, multi-row inserts.
 */
export async function seedDemo(sql: Sql, options: SeedDemoOptions = {}): Promise<SeedDemoResult> {
  const seed = options.seed ?? DEMO_SEED;
  const progress = options.progress ?? (() => {});
  const data = generateDemoData(seed);
  const inserted = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${LOCK_KEY})`;
    return insertAll(tx as unknown as Sql, data, progress);
  });
  return { seed, inserted, dataset: countsOf(data) };
}

function countsOf(data: DemoData): DemoCounts {
  return {
    customers: data.customers.length,
    invoices: data.invoices.length,
    invoice_lines: data.invoiceLines.length,
    payments: data.payments.length,
    credit_notes: data.creditNotes.length,
    tickets: data.tickets.length,
    ticket_messages: data.ticketMessages.length,
  };
}

/** postgres.js binds every value as a parameter; 65 535 per statement is the protocol's limit. */
function chunks<T>(rows: T[], size = 1000): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

async function insertAll(tx: Sql, data: DemoData, progress: (line: string) => void): Promise<DemoCounts> {
  progress(`customers: ${data.customers.length}`);
  const customers = new Set<string>();
  for (const part of chunks(data.customers)) {
    const rows = await tx<{ id: string }[]>`
      insert into customers ${tx(part)} on conflict (id) do nothing returning id`;
    for (const r of rows) customers.add(r.id);
  }

  progress(`invoices: ${data.invoices.length}`);
  const invoices = new Set<string>();
  const invoiceRows = data.invoices.filter((r) => customers.has(r.customer_id));
  for (const part of chunks(invoiceRows)) {
    const rows = await tx<{ number: string }[]>`
      insert into invoices ${tx(part)} on conflict (number) do nothing returning number`;
    for (const r of rows) invoices.add(r.number);
  }

  progress(`invoice lines: ${data.invoiceLines.length}`);
  let lines = 0;
  for (const part of chunks(data.invoiceLines.filter((r) => invoices.has(r.invoice_number)))) {
    lines += (await tx`insert into invoice_lines ${tx(part)} on conflict do nothing`).count;
  }

  progress(`payments: ${data.payments.length}`);
  let payments = 0;
  for (const part of chunks(data.payments.filter((r) => invoices.has(r.invoice_number)))) {
    payments += (await tx`insert into payments ${tx(part)} on conflict (id) do nothing`).count;
  }

  progress(`credit notes: ${data.creditNotes.length}`);
  let credits = 0;
  for (const part of chunks(data.creditNotes.filter((r) => invoices.has(r.invoice_number)))) {
    credits += (await tx`insert into credit_notes ${tx(part)} on conflict (number) do nothing`).count;
  }

  progress(`tickets: ${data.tickets.length}`);
  const tickets = new Set<string>();
  for (const part of chunks(data.tickets.filter((r) => customers.has(r.customer_id)))) {
    const rows = await tx<{ key: string }[]>`
      insert into tickets ${tx(part)} on conflict (key) do nothing returning key`;
    for (const r of rows) tickets.add(r.key);
  }

  progress(`ticket messages: ${data.ticketMessages.length}`);
  let messages = 0;
  for (const part of chunks(data.ticketMessages.filter((r) => tickets.has(r.ticket_key)))) {
    messages += (await tx`insert into ticket_messages ${tx(part)}`).count;
  }

  // New tickets and credit notes take their numbers from these sequences: move them past the demo's.
  await tx`
    select setval('ticket_key_seq', m) from (select max(substring(key from 3)::int) m from tickets) x
    where m >= (select last_value from ticket_key_seq)`;
  await tx`
    select setval('credit_note_seq', m) from (select max(substring(number from 9)::int) m from credit_notes) x
    where m >= (select last_value from credit_note_seq)`;

  return {
    customers: customers.size,
    invoices: invoices.size,
    invoice_lines: lines,
    payments,
    credit_notes: credits,
    tickets: tickets.size,
    ticket_messages: messages,
  };
}
