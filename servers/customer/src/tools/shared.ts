import { svgIcon, ToolError, type ToolContext } from '@bulkhead/core';
import { z } from 'zod';
import { customerExists } from '../queries.ts';

/** What a customer writes: trimmed, not empty, bounded. */
export const body = z.string().trim().min(1).max(5000).describe('Message text.');

export const write = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};

const path = (d: string) => svgIcon(`<path d='${d}'/>`);

/** One icon per kind of object or action. */
export const icons = {
  balance: path('M1 4h14v9H1zm9 3h4v3h-4z'),
  invoices: path('M2 1h9v11H2zm3 3h9v11H5z'),
  invoice: path('M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z'),
  tickets: path('M1 2h14v3H1zm0 4h14v3H1zm0 4h14v3H1z'),
  ticket: path('M1 2h14v9H6l-4 4v-4H1z'),
  open: path('M7 1h2v6h6v2H9v6H7V9H1V7h6z'),
  reply: path('M15 2H1v9h9l4 4v-4h1z'),
};

/**
 * The customer the token is bound to: the only customer any tool of this
 * server reads or writes. A token without one sees nothing.
 */
export async function customerOf(ctx: ToolContext): Promise<string> {
  const id = boundCustomer(ctx);
  await customerStillExists(ctx, id);
  return id;
}

/** The customer the token is bound to, without asking the database whether it still exists. */
export function boundCustomer(ctx: ToolContext): string {
  const id = ctx.access.customerId;
  if (!id)
    throw new ToolError(
      'this access is not bound to a customer, so there is no account to show — a customer token is issued with --customer',
    );
  return id;
}

/** Refuses when the bound customer's account is gone (a tool that found rows of it need not ask). */
export async function customerStillExists(ctx: ToolContext, id: string): Promise<void> {
  if (!(await customerExists(ctx.sql, id)))
    throw new ToolError(`the customer account ${id} of this access no longer exists — nothing to show`);
}

/**
 * Not found and not yours answer alike, word for word, so that a guessed
 * number reveals nothing about other customers.
 */
export const notFound = {
  invoice: (number: string) =>
    new ToolError(
      `invoice ${number} not found among your invoices — check the number (list_open_invoices lists unpaid ones)`,
    ),
  ticket: (key: string) =>
    new ToolError(`ticket ${key} not found among your tickets — check the key (list_my_tickets lists them)`),
  /** get_ticket's `message` past the end of the thread. */
  message: (key: string, n: number, total: number) =>
    new ToolError(
      total
        ? `ticket ${key} has no message ${n}: its messages are numbered 1 to ${total}`
        : `ticket ${key} has no messages yet`,
    ),
};
