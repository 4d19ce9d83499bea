import { addressProblem, svgIcon, ToolError, untrustedTextRef } from '@bulkhead/core';

/** A nullable database text, untrusted when present. */
export const untrustedOrNull = untrustedTextRef.nullable();

/** One icon per kind of object or action; the invoice is also the server's. */
export const icons = {
  customer: svgIcon("<circle cx='8' cy='5' r='3'/><path d='M2 15a6 6 0 0 1 12 0z'/>"),
  contact: svgIcon("<path d='M1 3h14v10H1zm3 3h5v1H4zm0 3h8v1H4z' fill-rule='evenodd'/>"),
  invoice: svgIcon("<path d='M3 1h10v14H3zm2 4h6v1H5zm0 3h6v1H5z' fill-rule='evenodd'/>"),
  send: svgIcon("<path d='M1 8l14-6-4 13-3-5z'/>"),
  credit: svgIcon("<circle cx='8' cy='8' r='7'/><path d='M4 8h8' stroke='#fff' stroke-width='2'/>"),
  tickets: svgIcon("<path d='M1 2h14v3H1zm0 4h14v3H1zm0 4h14v3H1z'/>"),
  ticket: svgIcon("<path d='M1 2h14v9H6l-4 4v-4H1z'/>"),
  tag: svgIcon("<path d='M1 1h7l7 7-7 7-7-7z'/>"),
  escalate: svgIcon("<path d='M8 1l6 7h-4v7H6V8H2z'/>"),
  answer: svgIcon("<path d='M15 2H1v9h9l4 4v-4h1z'/>"),
};

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

/** The sentence every gated tool's description ends with. */
export const GATED = 'Returns pending_approval (gated).';
