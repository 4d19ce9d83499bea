import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin, type AdminHarness } from './test-client.ts';

let h: AdminHarness;
beforeAll(async () => {
  h = await startAdmin();
});
afterAll(async () => {
  await h?.close();
});

type Invoice = { invoice_number: string; status: string; due_cents: number; issued_on: string };
const numbers = (r: { structured?: Record<string, unknown> | undefined }) =>
  (r.structured!.invoices as Invoice[]).map((i) => i.invoice_number);

describe('list_invoices', () => {
  it("lists a customer's unsettled invoices, overdue ones marked, with the amount still due", async () => {
    const r = await h.call('list_invoices', { customer_id: 'C-1001', status: 'open' });
    expect(r.isError).toBe(false);
    const inv = (
      invoice_number: string,
      status: string,
      issued_on: string,
      due_on: string,
      total: number,
      due: number,
    ) => ({
      invoice_number,
      customer_id: 'C-1001',
      status,
      issued_on,
      due_on,
      currency: 'EUR',
      total_cents: total,
      due_cents: due,
    });
    expect(r.structured).toEqual({
      invoices: [
        inv('R-2026-0476', 'open', '2026-10-31', '2028-06-30', 330700, 330700),
        inv('R-2026-0451', 'overdue', '2026-10-16', '2026-11-15', 330175, 330175),
        // Partly credited: 39 000 − 5 850 credit note.
        inv('R-2026-0426', 'overdue', '2026-09-30', '2026-10-30', 39000, 33150),
        inv('R-2026-0376', 'overdue', '2026-08-29', '2026-10-28', 65550, 65550),
        // Partly paid.
        inv('R-2026-0026', 'overdue', '2026-01-20', '2026-03-21', 645525, 501698),
      ],
      count: 5,
      total: 5,
      truncated: false,
    });
  });

  it('filters by the derived status overdue', async () => {
    const r = await h.call('list_invoices', { customer_id: 'C-1001', status: 'overdue' });
    expect(numbers(r)).toEqual(['R-2026-0451', 'R-2026-0426', 'R-2026-0376', 'R-2026-0026']);
    const all = await h.call('list_invoices', { status: 'overdue', limit: 1 });
    // Overdue is derived from today's date: the demo data has invoices falling due every month.
    const [overdue] = await h.db.sql<{ n: number }[]>`
      select count(*)::int as n from invoices where status = 'open' and due_on < current_date`;
    expect(overdue!.n).toBeGreaterThan(90);
    expect(all.structured).toMatchObject({ count: 1, total: overdue!.n, truncated: true });
  });

  it('lists drafts, and shows nothing due on a void invoice', async () => {
    const drafts = await h.call('list_invoices', { status: 'draft' });
    expect(numbers(drafts)).toEqual([
      'R-2026-0500',
      'R-2026-0499',
      'R-2026-0498',
      'R-2026-0497',
      'R-2026-0496',
      'R-2026-0495',
      'R-2026-0494',
      'R-2026-0493',
    ]);
    const voided = await h.call('list_invoices', { customer_id: 'C-1001', status: 'void' });
    expect(voided.structured!.invoices).toMatchObject([
      { invoice_number: 'R-2026-0151', total_cents: 455825, due_cents: 0 },
    ]);
  });

  it('pages through a month with limit and offset, newest first, without gaps or repeats', async () => {
    const seen: string[] = [];
    for (let offset = 0; ; offset += 20) {
      const r = await h.call('list_invoices', { period: '2026-03', offset });
      const page = r.structured as { invoices: Invoice[]; count: number; total: number; truncated: boolean };
      expect(page.total).toBe(49);
      expect(page.truncated).toBe(offset + page.count < 49);
      for (const i of page.invoices) expect(i.issued_on.startsWith('2026-03-')).toBe(true);
      seen.push(...page.invoices.map((i) => i.invoice_number));
      if (!page.truncated) break;
    }
    expect(seen).toHaveLength(49);
    expect(new Set(seen).size).toBe(49);
    expect(seen).toEqual([...seen].sort().reverse());
    const beyond = await h.call('list_invoices', { period: '2026-03', offset: 60 });
    expect(beyond).toEqual({
      isError: true,
      text: 'offset 60 is past the end: 49 invoices match — use an offset below 49',
      structured: undefined,
    });
    const end = await h.call('list_invoices', { period: '2026-03', offset: 49 });
    expect(end.text).toBe('offset 49 is past the end: 49 invoices match — use an offset below 49');
  });

  it('takes a year as period, and defaults to 20 rows', async () => {
    const year = await h.call('list_invoices', { period: '2026' });
    expect(year.structured).toMatchObject({ count: 20, total: 500, truncated: true });
    expect(numbers(year)[0]).toBe('R-2026-0500');
    const none = await h.call('list_invoices', { customer_id: 'C-1001', period: '2025' });
    expect(none).toMatchObject({
      isError: false,
      structured: { invoices: [], count: 0, total: 0, truncated: false },
    });
    const noneFurther = await h.call('list_invoices', { customer_id: 'C-1001', period: '2025', offset: 40 });
    expect(noneFurther.structured).toEqual({ invoices: [], count: 0, total: 0, truncated: false });
  });

  it('says that an unknown customer does not exist instead of listing nothing', async () => {
    const r = await h.call('list_invoices', { customer_id: 'C-9999' });
    expect(r).toMatchObject({
      isError: true,
      text: 'customer C-9999 not found — check the customer number (find_customers searches by name or e-mail)',
    });
  });

  it('refuses a bad period, an unknown status and a limit over 100', async () => {
    const month = await h.call('list_invoices', { period: '2026-13' });
    expect(month.text).toContain('period: got "2026-13", expected a value matching');
    const status = await h.call('list_invoices', { status: 'unpaid' });
    expect(status.text).toContain(
      'status: got "unpaid", expected one of "draft", "open", "overdue", "paid", "void"',
    );
    const limit = await h.call('list_invoices', { limit: 101 });
    expect(limit).toMatchObject({ isError: true });
    expect(limit.text).toContain('limit: got 101, expected a number <= 100');
    const offset = await h.call('list_invoices', { offset: -1 });
    expect(offset.text).toContain('offset: got -1, expected a number >= 0');
  });
});
