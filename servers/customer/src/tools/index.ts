import type { AnyTool } from '@bulkhead/core';
import { addTicketMessage } from './add-ticket-message.ts';
import { getAccountBalance } from './get-account-balance.ts';
import { getInvoice } from './get-invoice.ts';
import { getTicket } from './get-ticket.ts';
import { listMyTickets } from './list-my-tickets.ts';
import { listOpenInvoices } from './list-open-invoices.ts';
import { openTicket } from './open-ticket.ts';

/** Every tool of the customer server, in the order tools/list shows them. */
export const tools: AnyTool[] = [
  getAccountBalance,
  listOpenInvoices,
  getInvoice,
  listMyTickets,
  getTicket,
  openTicket,
  addTicketMessage,
];
