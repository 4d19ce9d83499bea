import {
  AGENTS,
  COMPANIES,
  FIRST_NAMES,
  FOLLOW_UPS,
  INJECTION_TICKETS,
  LAST_NAMES,
  PHONE_PREFIX,
  PRODUCTS,
  STREETS,
  TICKET_THEMES,
  type TicketTheme,
} from './catalog.ts';
import { createRandom, type Random } from './prng.ts';

/** The seed used when none is given; the demo data set is a pure function of it. */
export const DEMO_SEED = 20_260_101;

/**
 * The data set's "as of" day: nothing is paid, sent or written after it. Dates
 * are fixed rather than relative to now so that every run yields the same rows;
 * open invoices fall due before it (overdue by weeks to months whenever the
 * data is used in 2026 or 2027) or far after it (2028, not yet due).
 */
export const DEMO_REFERENCE_DATE = '2026-11-20';

/** Ticket keys whose text tries to instruct an assistant (English, German, one with zero-width characters). */
export const DEMO_INJECTION_TICKETS: readonly string[] = INJECTION_TICKETS.map(([i]) => ticketKey(i));

export interface CustomerRow {
  id: string;
  name: string;
  email: string;
  phone: string;
  street: string;
  postal_code: string;
  city: string;
  country: string;
  language: 'de' | 'en';
  created_at: string;
  updated_at: string;
}

export interface InvoiceRow {
  number: string;
  customer_id: string;
  status: 'draft' | 'open' | 'paid' | 'void';
  issued_on: string;
  due_on: string;
  currency: string;
  total_cents: number;
  sent_at: string | null;
  paid_at: string | null;
}

export interface InvoiceLineRow {
  invoice_number: string;
  line_no: number;
  description: string;
  quantity: string;
  unit_price_cents: number;
  amount_cents: number;
}

export interface PaymentRow {
  id: string;
  invoice_number: string;
  customer_id: string;
  amount_cents: number;
  received_on: string;
  method: 'bank_transfer' | 'card' | 'direct_debit';
}

export interface CreditNoteRow {
  number: string;
  invoice_number: string;
  customer_id: string;
  amount_cents: number;
  reason: string;
  issued_at: string;
}

export interface TicketRow {
  key: string;
  customer_id: string;
  subject: string;
  category: TicketTheme['category'] | null;
  status: 'open' | 'pending' | 'escalated' | 'resolved' | 'closed';
  created_at: string;
  updated_at: string;
  escalated_at: string | null;
  escalation_reason: string | null;
}

export interface TicketMessageRow {
  ticket_key: string;
  author_kind: 'customer' | 'agent' | 'system';
  author_name: string;
  body: string;
  created_at: string;
}

/** The whole demo data set, rows ready for insertion, in insertion order. */
export interface DemoData {
  customers: CustomerRow[];
  invoices: InvoiceRow[];
  invoiceLines: InvoiceLineRow[];
  payments: PaymentRow[];
  creditNotes: CreditNoteRow[];
  tickets: TicketRow[];
  ticketMessages: TicketMessageRow[];
}

const DAY = 86_400_000;
const INVOICES = 500;
const DRAFTS_FROM = 492;
const TICKETS = 300;
/** Open invoices on long payment terms: never overdue while the demo is in use. */
const NOT_YET_DUE = new Set([470, 475, 480, 485, 488, 490]);
const FAR_DUE_ON = '2028-06-30';

function addDays(day: string, n: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
}

function minDay(a: string, b: string): string {
  return a < b ? a : b;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

function customerId(index: number): string {
  return `C-${1001 + index}`;
}

function invoiceNumber(index: number): string {
  return `R-2026-${pad(index + 1, 4)}`;
}

function ticketKey(index: number): string {
  return `T-${1001 + index}`;
}

function contactName(customerIndex: number): string {
  return `${FIRST_NAMES[customerIndex % FIRST_NAMES.length]} ${LAST_NAMES[(customerIndex * 7) % LAST_NAMES.length]}`;
}

function customers(rnd: Random): CustomerRow[] {
  return COMPANIES.map(([name, domain, postal, city, country, language], k) => {
    const created = `${addDays('2025-03-03', k * 4)}T09:00:00.000Z`;
    return {
      id: customerId(k),
      name,
      email: `${language === 'de' ? 'buchhaltung' : rnd.pick(['accounts', 'billing', 'office'])}@${domain}`,
      phone: `${PHONE_PREFIX[country] ?? '+49'} ${rnd.int(20, 99)} ${rnd.int(1_000_000, 9_999_999)}`,
      street: `${rnd.pick(STREETS[country] ?? STREETS.DE!)} ${rnd.int(1, 120)}`,
      postal_code: postal,
      city,
      country,
      language,
      created_at: created,
      updated_at: created,
    };
  });
}

function invoiceCustomer(rnd: Random, i: number): number {
  // C-1001 (the demo token's customer) gets every 25th invoice so that it has some in every state and age.
  if (i % 25 === 0) return 0;
  // A handful of larger accounts buy more often.
  return rnd.chance(0.3) ? rnd.int(1, 10) : rnd.int(1, 49);
}

function billing(rnd: Random, data: DemoData, people: CustomerRow[]): void {
  let paymentNo = 0;
  let creditNo = 0;
  const pay = (inv: InvoiceRow, amount: number, on: string) => {
    paymentNo += 1;
    data.payments.push({
      id: `P-${pad(paymentNo, 5)}`,
      invoice_number: inv.number,
      customer_id: inv.customer_id,
      amount_cents: amount,
      received_on: on,
      method: rnd.pick(['bank_transfer', 'bank_transfer', 'direct_debit', 'card'] as const),
    });
  };
  const credit = (inv: InvoiceRow, amount: number, german: boolean) => {
    creditNo += 1;
    const reason = german
      ? rnd.pick(['Preisnachlass wegen Lieferverzug', 'Doppelt berechnete Stunden', 'Kulanz'])
      : rnd.pick(['Discount for late delivery', 'Hours billed twice', 'Goodwill']);
    data.creditNotes.push({
      number: `CN-2026-${pad(creditNo, 4)}`,
      invoice_number: inv.number,
      customer_id: inv.customer_id,
      amount_cents: amount,
      reason,
      issued_at: `${minDay(addDays(inv.issued_on, rnd.int(10, 40)), DEMO_REFERENCE_DATE)}T14:00:00.000Z`,
    });
  };

  for (let i = 0; i < INVOICES; i++) {
    const k = invoiceCustomer(rnd, i);
    const german = people[k]!.language === 'de';
    const issued = addDays('2026-01-05', Math.floor((i * 315) / (INVOICES - 1)));
    const terms = rnd.pick([14, 14, 30, 30, 30, 60]);
    const number = invoiceNumber(i);

    const count = rnd.int(1, 5);
    const used = new Set<number>();
    let total = 0;
    for (let line = 1; line <= count; line++) {
      let p = rnd.int(0, PRODUCTS.length - 1);
      while (used.has(p)) p = (p + 1) % PRODUCTS.length;
      used.add(p);
      const [en, de, price, fractional] = PRODUCTS[p]!;
      const quantity = fractional ? rnd.int(2, 24) / 2 : rnd.int(1, price < 5000 ? 20 : 3);
      const amount = Math.round(quantity * price);
      total += amount;
      data.invoiceLines.push({
        invoice_number: number,
        line_no: line,
        description: german ? de : en,
        quantity: quantity.toFixed(2),
        unit_price_cents: price,
        amount_cents: amount,
      });
    }

    let status: InvoiceRow['status'];
    let due = addDays(issued, terms);
    if (i >= DRAFTS_FROM) status = 'draft';
    else if (NOT_YET_DUE.has(i)) {
      status = 'open';
      due = FAR_DUE_ON;
    } else if (rnd.chance(0.04)) status = 'void';
    else if (due >= addDays(DEMO_REFERENCE_DATE, -30)) status = rnd.chance(0.75) ? 'open' : 'paid';
    else status = rnd.chance(0.12) ? 'open' : 'paid';

    const inv: InvoiceRow = {
      number,
      customer_id: customerId(k),
      status,
      issued_on: issued,
      due_on: due,
      currency: 'EUR',
      total_cents: total,
      sent_at: status === 'draft' ? null : `${issued}T08:00:00.000Z`,
      paid_at: null,
    };
    data.invoices.push(inv);

    if (status === 'paid') {
      const credited = rnd.chance(0.05) ? Math.round(total * 0.1) : 0;
      if (credited) credit(inv, credited, german);
      const owed = total - credited;
      let on = minDay(addDays(issued, rnd.int(3, terms + 15)), DEMO_REFERENCE_DATE);
      if (rnd.chance(0.15) && owed > 100) {
        const first = Math.round(owed * (0.4 + rnd.next() * 0.3));
        pay(inv, first, on);
        on = minDay(addDays(on, rnd.int(5, 20)), DEMO_REFERENCE_DATE);
        pay(inv, owed - first, on);
      } else pay(inv, owed, on);
      inv.paid_at = `${on}T10:00:00.000Z`;
    } else if (status === 'open' && !NOT_YET_DUE.has(i)) {
      if (rnd.chance(0.3) && total > 100) {
        const part = Math.round(total * (0.2 + rnd.next() * 0.4));
        pay(inv, part, minDay(addDays(issued, rnd.int(5, terms)), DEMO_REFERENCE_DATE));
      }
      if (rnd.chance(0.08)) credit(inv, Math.round(total * 0.15), german);
    }
  }
}

function ticketStatus(rnd: Random, ageDays: number, spam: boolean): TicketRow['status'] {
  if (spam) return rnd.chance(0.8) ? 'closed' : 'open';
  if (ageDays > 90)
    return rnd.pick([
      'closed',
      'closed',
      'closed',
      'resolved',
      'resolved',
      'open',
      'pending',
      'escalated',
    ] as const);
  return rnd.pick(['open', 'open', 'pending', 'pending', 'escalated', 'resolved', 'closed'] as const);
}

const SECOND_REPLY = {
  en: 'We have looked into it again and updated your setup. Let us know if anything is still unclear.',
  de: 'Wir haben uns das noch einmal angesehen und Ihre Einstellungen angepasst. Melden Sie sich gern, falls noch etwas unklar ist.',
} as const;

const ESCALATED_NOTE = {
  en: 'Your ticket has been passed on to our second-level support.',
  de: 'Ihr Ticket wurde an unseren Second-Level-Support weitergegeben.',
} as const;

const ESCALATION_REASONS = [
  'Repeated outage affecting the customer’s month-end closing',
  'Customer disputes the invoice amount; needs a decision by accounting',
  'Possible data protection issue; legal review requested',
] as const;

function helpdesk(rnd: Random, data: DemoData, people: CustomerRow[]): void {
  const injections = new Map(INJECTION_TICKETS.map((t) => [t[0], t]));
  const invoicesOf = new Map<string, InvoiceRow[]>();
  for (const inv of data.invoices) {
    if (inv.status === 'draft') continue;
    invoicesOf.set(inv.customer_id, [...(invoicesOf.get(inv.customer_id) ?? []), inv]);
  }
  const start = Date.parse('2026-01-03T08:00:00Z');
  const reference = Date.parse(`${DEMO_REFERENCE_DATE}T00:00:00Z`);

  for (let i = 0; i < TICKETS; i++) {
    const key = ticketKey(i);
    const opened = start + Math.floor((i * 320 * DAY) / TICKETS) + rnd.int(0, 8) * 3_600_000;
    const injection = injections.get(i);
    const k = injection ? injection[1] : i % 20 === 0 ? 0 : rnd.int(1, 49);
    const customer = people[k]!;
    const lang = customer.language;
    const contact = contactName(k);
    const messages: TicketMessageRow[] = [];
    let at = opened;
    const say = (author_kind: TicketMessageRow['author_kind'], author_name: string, body: string) => {
      messages.push({
        ticket_key: key,
        author_kind,
        author_name,
        body,
        created_at: new Date(at).toISOString(),
      });
      at += rnd.int(1, 30) * 3_600_000;
    };

    let row: TicketRow;
    if (injection) {
      const [, , category, subject, body] = injection;
      say('customer', contact, body);
      row = {
        key,
        customer_id: customer.id,
        subject,
        category,
        status: 'open',
        created_at: new Date(opened).toISOString(),
        updated_at: new Date(opened).toISOString(),
        escalated_at: null,
        escalation_reason: null,
      };
    } else {
      const day = new Date(opened).toISOString().slice(0, 10);
      const own = (invoicesOf.get(customer.id) ?? [])
        .filter((inv) => inv.issued_on < day)
        .map((inv) => inv.number);
      let theme = rnd.pick(TICKET_THEMES);
      if (!own.length) while (theme[lang].subject.includes('{invoice}')) theme = rnd.pick(TICKET_THEMES);
      const invoice = own.length ? rnd.pick(own) : '';
      const text = (s: string) => s.replaceAll('{invoice}', invoice);
      const status = ticketStatus(rnd, (reference - opened) / DAY, theme.category === 'spam');
      const agent = rnd.pick(AGENTS);
      const minimum = status === 'resolved' || status === 'closed' ? 2 : 1;
      const count = Math.max(minimum, rnd.int(1, 4));
      say('customer', theme.category === 'spam' ? 'Marketing Team' : contact, text(theme[lang].body));
      if (count >= 2) say('agent', agent, text(theme[lang].reply));
      if (count >= 3) {
        const followUps = FOLLOW_UPS[lang].filter((_, n) => n !== 1 || theme.category === 'incident');
        say('customer', contact, rnd.pick(followUps));
      }
      if (count >= 4) say('agent', agent, SECOND_REPLY[lang]);
      let escalatedAt: string | null = null;
      let reason: string | null = null;
      if (status === 'escalated') {
        escalatedAt = new Date(at).toISOString();
        reason = rnd.pick(ESCALATION_REASONS);
        // The reason stays on the ticket (staff only); the thread says what the customer may read.
        say('system', 'helpdesk', ESCALATED_NOTE[lang]);
      }
      row = {
        key,
        customer_id: customer.id,
        subject: text(theme[lang].subject),
        category: rnd.chance(0.12) ? null : theme.category,
        status,
        created_at: new Date(opened).toISOString(),
        updated_at: messages[messages.length - 1]!.created_at,
        escalated_at: escalatedAt,
        escalation_reason: reason,
      };
    }
    data.tickets.push(row);
    data.ticketMessages.push(...messages);
  }
}

/**
 * Builds the demo data set in memory. A pure function of `seed`: the same seed
 * gives identical rows on every machine and every day.
 */
export function generateDemoData(seed: number = DEMO_SEED): DemoData {
  const rnd = createRandom(seed);
  const data: DemoData = {
    customers: customers(rnd),
    invoices: [],
    invoiceLines: [],
    payments: [],
    creditNotes: [],
    tickets: [],
    ticketMessages: [],
  };
  billing(rnd, data, data.customers);
  helpdesk(rnd, data, data.customers);
  return data;
}
