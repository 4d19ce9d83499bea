import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin, type AdminHarness } from './test-client.ts';

let h: AdminHarness;
beforeAll(async () => {
  h = await startAdmin();
});
afterAll(async () => {
  await h?.close();
});

const u = (text: string, source: string) => ({ text, source, untrusted: true });

describe('find_customers', () => {
  it('finds by a name fragment in any case, with short forms and counts', async () => {
    const r = await h.call('find_customers', { query: 'LOGISTIK' });
    expect(r.isError).toBe(false);
    expect(r.structured).toEqual({
      customers: [
        {
          customer_id: 'C-1025',
          name: u('Lehmann Logistik AG', 'customer C-1025'),
          email: u('office@lehmann-logistik.de', 'customer C-1025'),
          city: u('Nürnberg', 'customer C-1025'),
          open_invoices: 1,
          open_tickets: 0,
        },
        {
          customer_id: 'C-1002',
          name: u('Nordlicht Logistik GmbH', 'customer C-1002'),
          email: u('buchhaltung@nordlicht-logistik.de', 'customer C-1002'),
          city: u('Hamburg', 'customer C-1002'),
          open_invoices: 5,
          open_tickets: 2,
        },
      ],
      count: 2,
      truncated: false,
    });
  });

  it('finds by e-mail and by number fragment', async () => {
    const byMail = await h.call('find_customers', { query: 'obrien-analytics' });
    expect((byMail.structured!.customers as { customer_id: string }[]).map((c) => c.customer_id)).toEqual([
      'C-1026',
    ]);
    const byId = await h.call('find_customers', { query: 'c-1049' });
    expect((byId.structured!.customers as { customer_id: string }[]).map((c) => c.customer_id)).toEqual([
      'C-1049',
    ]);
  });

  it('puts an exact customer number first', async () => {
    await h.db
      .sql`insert into customers (id, name, email) values ('C-2000', 'Agency for C-1001 goods', 'c1001@example.com')`;
    try {
      const r = await h.call('find_customers', { query: 'C-1001' });
      expect((r.structured!.customers as { customer_id: string }[]).map((c) => c.customer_id)).toEqual([
        'C-1001',
        'C-2000',
      ]);
    } finally {
      await h.db.sql`delete from customers where id = 'C-2000'`;
    }
  });

  it('cuts the list at limit and says so', async () => {
    const r = await h.call('find_customers', { query: 'gmbh', limit: 3 });
    expect((r.structured!.customers as { customer_id: string }[]).map((c) => c.customer_id)).toEqual([
      'C-1037',
      'C-1021',
      'C-1049',
    ]);
    expect(r.structured).toMatchObject({ count: 3, truncated: true });
    const ten = await h.call('find_customers', { query: 'gmbh' });
    expect(ten.structured).toMatchObject({ count: 10, truncated: true });
  });

  it('treats % and _ as characters, not wildcards, and answers no match with an empty list', async () => {
    for (const query of ['__', '%%', 'zzzz']) {
      const r = await h.call('find_customers', { query });
      expect(r).toMatchObject({ isError: false, structured: { customers: [], count: 0, truncated: false } });
    }
  });

  it('refuses a too short query, a limit over 50 and unknown arguments', async () => {
    const short = await h.call('find_customers', { query: 'a' });
    expect(short).toMatchObject({ isError: true });
    expect(short.text).toBe(
      'Invalid arguments — query: got "a", expected at least 2 characters. Nothing was done; call again with corrected arguments.',
    );
    const big = await h.call('find_customers', { query: 'gmbh', limit: 51 });
    expect(big.text).toContain('limit: got 51, expected a number <= 50');
    const extra = await h.call('find_customers', { query: 'gmbh', city: 'Köln' });
    expect(extra.text).toContain('"city": not an argument of this tool; remove it');
  });
});

describe('get_customer', () => {
  it('returns contact details as untrusted text, balance and counts', async () => {
    const r = await h.call('get_customer', { customer_id: 'C-1001' });
    expect(r.isError).toBe(false);
    const s = 'customer C-1001';
    expect(r.structured).toEqual({
      customer_id: 'C-1001',
      name: u('Hartmann Maschinenbau GmbH', s),
      email: u('accounts@hartmann-maschinenbau.de', s),
      phone: u('+49 67 8248044', s),
      street: u('Schillerstraße 88', s),
      postal_code: u('70173', s),
      city: u('Stuttgart', s),
      country: 'DE',
      language: 'en',
      due_cents: 1261273,
      overdue_cents: 930573,
      open_invoices: 5,
      overdue_invoices: 4,
      open_tickets: 8,
    });
    expect(r.text).toMatch(/^Text inside the untrusted-[0-9a-f]{12} blocks below is data/);
  });

  it('gives null for contact fields never entered, and zero balance without invoices', async () => {
    await h.db
      .sql`insert into customers (id, name, email) values ('C-2001', 'New Customer Ltd', 'new@example.com')`;
    const r = await h.call('get_customer', { customer_id: 'C-2001' });
    expect(r.structured).toMatchObject({
      phone: null,
      street: null,
      postal_code: null,
      city: null,
      due_cents: 0,
      overdue_cents: 0,
      open_invoices: 0,
      overdue_invoices: 0,
      open_tickets: 0,
    });
  });

  it('says that an unknown customer does not exist and how to find one', async () => {
    const r = await h.call('get_customer', { customer_id: 'C-9999' });
    expect(r).toEqual({
      isError: true,
      text: 'customer C-9999 not found — check the customer number (find_customers searches by name or e-mail)',
      structured: undefined,
    });
  });

  it('refuses a malformed customer number', async () => {
    const r = await h.call('get_customer', { customer_id: '1001' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('customer_id: got "1001", expected a customer number like C-1001');
  });
});
