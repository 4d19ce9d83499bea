import { createServer } from '@bulkhead/core';
import { icons } from './tools/shared.ts';
import { tools } from './tools/index.ts';

/** One customer's own view: balance, invoices and helpdesk tickets. Every token is bound to one customer. */
export const customerServer = createServer({
  name: 'customer',
  version: '0.1.0',
  title: 'Customer account',
  description:
    'One customer’s own account: balance, unpaid invoices, invoice details and helpdesk tickets. ' +
    'The customer comes from the access token; no tool takes a customer id.',
  icons: icons.balance,
  tools,
});
