import { createServer } from '@bulkhead/core';
import { icons } from './tools/shared.ts';
import { tools } from './tools/index.ts';

/** Billing and helpdesk administration: customers, invoices, tickets; actions that leave the house are gated. */
export const adminServer = createServer({
  name: 'admin',
  version: '0.1.0',
  title: 'Billing and helpdesk administration',
  description:
    'Customers, invoices and helpdesk tickets for the operators; answers, invoices, credit notes and contact changes wait for a person’s approval.',
  icons: icons.invoice,
  tools,
});
