import { addressProblem, svgIcon, ToolError, untrustedTextRef } from '@bulkhead/core';

/** A nullable database text, untrusted when present. */
export const untrustedOrNull = untrustedTextRef.nullable();

/**
 * The server's icon (initialize, server/discover). Its tools carry none: twelve
 * tool icons would cost some 2,000 characters of every tools/list, more than the
 * budget leaves, and clients show the server's icon beside its tools.
 */
export const serverIcon = svgIcon("<path d='M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z' fill-rule='evenodd'/>");

/** "€1,234.50": amounts as the person approving reads them. */
export function money(cents: number, currency: string): string {
  return new Intl.NumberFormat('en', { style: 'currency', currency }).format(cents / 100);
}

/** The errors the model meets most, worded the same by every tool. */
export const notFound = {
  customer: (id: string) =>
    new ToolError(
      `customer ${id} not found — check the customer number (find_customers searches by name or e-mail)`,
    ),
  invoice: (number: string) =>
    new ToolError(
      `invoice ${number} not found — check the invoice number (list_invoices lists a customer's invoices)`,
    ),
  ticket: (key: string) =>
    new ToolError(`ticket ${key} not found — check the ticket key (list_tickets lists tickets)`),
  /** get_ticket's `message` past the end of the thread. */
  message: (key: string, n: number, total: number) =>
    new ToolError(
      total
        ? `ticket ${key} has no message ${n}: its messages are numbered 1 to ${total}`
        : `ticket ${key} has no messages yet`,
    ),
};

/**
 * The customer's address on file, when it can head an e-mail; otherwise a
 * ToolError saying why not (an address someone entered with a line break
 * would add header lines to the message) and how to fix it.
 */
export function mailableAddress(customerId: string, email: string): string {
  const problem = addressProblem(email);
  if (problem)
    throw new ToolError(
      `the e-mail address on file for customer ${customerId} cannot be used (${problem}); nothing was done — ` +
        'correct it with update_customer_contact, then call again',
    );
  return email;
}

/** "the first 80 characters…" of a text, for a preview sentence. */
export function excerpt(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** The sentence every gated tool's description ends with. */
export const GATED = 'Returns pending_approval (gated).';
