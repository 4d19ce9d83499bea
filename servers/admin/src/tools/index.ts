import type { AnyTool } from '@bulkhead/core';
import { answerTicket } from './answer-ticket.ts';
import { categorizeTicket } from './categorize-ticket.ts';
import { escalateTicket } from './escalate-ticket.ts';
import { findCustomers } from './find-customers.ts';
import { getCustomer } from './get-customer.ts';
import { getTicket } from './get-ticket.ts';
import { issueCreditNote } from './issue-credit-note.ts';
import { listInvoices } from './list-invoices.ts';
import { listTickets } from './list-tickets.ts';
import { sendInvoice } from './send-invoice.ts';
import { updateCustomerContact } from './update-customer-contact.ts';

/** Every tool of admin, in the order tools/list shows them: customers, invoices, tickets; reads before writes. */
export const tools: AnyTool[] = [
  findCustomers,
  getCustomer,
  updateCustomerContact,
  listInvoices,
  sendInvoice,
  issueCreditNote,
  listTickets,
  getTicket,
  categorizeTicket,
  escalateTicket,
  answerTicket,
];
