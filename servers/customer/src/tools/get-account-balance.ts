import { defineTool, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import { accountBalances } from '../queries.ts';
import { boundCustomer, customerStillExists, icons } from './shared.ts';

export const getAccountBalance = defineTool({
  name: 'get_account_balance',
  title: 'Account balance',
  description:
    'What this account owes, per currency. Returns customer_id and balances (currency, due_cents: unpaid after payments and credit notes, ' +
    'overdue_cents, open_invoices, overdue_invoices, oldest_overdue_days, next_due_on). No arguments; list_open_invoices lists the invoices.',
  scope: 'account:read',
  input: z.strictObject({}),
  output: z.object({
    customer_id: z.string(),
    balances: z.array(
      z.object({
        currency: z.string(),
        due_cents: z.number(),
        overdue_cents: z.number(),
        open_invoices: z.number(),
        overdue_invoices: z.number(),
        oldest_overdue_days: z.number().nullable(),
        next_due_on: z.string().nullable(),
      }),
    ),
  }),
  annotations: READ_ONLY,
  icons: icons.balance,
  timeoutMs: 5_000,
  handler: async (_args, ctx) => {
    const customerId = boundCustomer(ctx);
    const rows = await accountBalances(ctx.sql, customerId);
    // Balances exist only for an account that does; with none, the account may be gone.
    if (rows.length === 0) await customerStillExists(ctx, customerId);
    return {
      customer_id: customerId,
      balances: rows.map((b) => ({
        currency: b.currency,
        due_cents: b.dueCents,
        overdue_cents: b.overdueCents,
        open_invoices: b.openInvoices,
        overdue_invoices: b.overdueInvoices,
        oldest_overdue_days: b.oldestOverdueDays,
        next_due_on: b.nextDueOn,
      })),
    };
  },
});
