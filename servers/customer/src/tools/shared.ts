import { ToolError, untrustedTextSchema, type ToolContext, type ToolIcon } from '@bulkhead/core';
import { z } from 'zod';
import { customerExists } from '../queries.ts';

/** `R-2026-0001`, `T-1001`: the same argument names and shapes on every server. */
export const invoiceNumber = z.string().regex(/^R-\d{4}-\d{4}$/);
export const ticketKey = z.string().regex(/^T-\d{4}$/);

/** A page size with a default and a maximum. */
export const limit = (byDefault: number, max: number) =>
  z.number().int().min(1).max(max).default(byDefault).describe(`Default ${byDefault}, max ${max}.`);

export const offset = z.number().int().min(0).max(100_000).default(0).describe('Rows to skip, default 0.');

/** What a customer writes: trimmed, not empty, bounded. */
export const body = z.string().trim().min(1).max(5000).describe('Message text.');

/**
 * The kit's untrusted-text schema under an id, so that an output schema holds
 * its definition once (`$defs`) and a short `$ref` at each field: tools/list is
 * paid for on every request.
 */
export const untrustedText = untrustedTextSchema.meta({ id: 'untrusted_text' });

export const ro = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const write = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};

// Inline SVG (no request leaves the client); "<", ">" and "#" are percent-encoded.
function svg(path: string): ToolIcon[] {
  const markup = `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'><path d='${path}'/></svg>`;
  return [{ src: `data:image/svg+xml,${markup.replace(/[<>#]/g, encodeURIComponent)}` }];
}

/** One icon per kind of object or action. */
export const icons = {
  balance: svg('M1 4h14v9H1zm9 3h4v3h-4z'),
  invoices: svg('M2 1h9v11H2zm3 3h9v11H5z'),
  invoice: svg('M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z'),
  tickets: svg('M1 2h14v3H1zm0 4h14v3H1zm0 4h14v3H1z'),
  ticket: svg('M1 2h14v9H6l-4 4v-4H1z'),
  open: svg('M7 1h2v6h6v2H9v6H7V9H1V7h6z'),
  reply: svg('M15 2H1v9h9l4 4v-4h1z'),
};

/**
 * The customer the token is bound to: the only customer any tool of this
 * server reads or writes. A token without one sees nothing.
 */
export async function customerOf(ctx: ToolContext): Promise<string> {
  const id = ctx.access.customerId;
  if (!id)
    throw new ToolError(
      'this access is not bound to a customer, so there is no account to show — a customer token is issued with --customer',
    );
  if (!(await customerExists(ctx.sql, id)))
    throw new ToolError(`the customer account ${id} of this access no longer exists — nothing to show`);
  return id;
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
};
