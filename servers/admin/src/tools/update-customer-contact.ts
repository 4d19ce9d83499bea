import { customerIdArg, defineTool, ToolError, type ToolContext } from '@bulkhead/core';
import { z } from 'zod';
import {
  lockCustomerContact,
  updateCustomerContact as updateContact,
  type ContactFields,
} from '../queries.ts';
import { GATED, icons, notFound } from './shared.ts';

const FIELDS = ['email', 'phone', 'street', 'postal_code', 'city'] as const;

/** The given fields that differ from what is stored, as [field, old, new]. */
async function contactChanges(ctx: ToolContext, id: string, wanted: ContactFields) {
  const current = await lockCustomerContact(ctx.sql, id);
  if (!current) throw notFound.customer(id);
  const changes = FIELDS.flatMap((f) => {
    const next = wanted[f];
    return next !== undefined && next !== current[f] ? [[f, current[f], next] as const] : [];
  });
  if (!changes.length)
    throw new ToolError(
      `customer ${id} already has these contact details; nothing would change — get_customer shows them`,
    );
  return { customer: current, changes };
}

export const updateCustomerContact = defineTool({
  name: 'update_customer_contact',
  title: 'Update customer contact',
  description:
    'Changes contact details of the customer with this customer_id: email, phone, street, postal_code, city, only the ' +
    `ones given (at least one). Executed result: customer_id, changed (field names). get_customer shows them. ${GATED}`,
  scope: 'customers:write',
  input: z
    .strictObject({
      customer_id: customerIdArg.describe('Customer number.'),
      email: z
        .string()
        .trim()
        .max(254)
        .regex(/^[^\s@]+@[^\s@]+\.[A-Za-z]{2,}$/)
        .optional()
        .describe('New e-mail address.'),
      phone: z
        .string()
        .trim()
        .regex(/^\+?[0-9 ()/-]{5,30}$/)
        .optional()
        .describe('New phone number.'),
      street: z.string().trim().min(2).max(200).optional().describe('New street and number.'),
      postal_code: z
        .string()
        .trim()
        .regex(/^[A-Za-z0-9 -]{3,10}$/)
        .optional()
        .describe('New postal code.'),
      city: z.string().trim().min(2).max(100).optional().describe('New city.'),
    })
    .refine((a) => FIELDS.some((f) => a[f] !== undefined), {
      message: `at least one of ${FIELDS.join(', ')}`,
    }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  icons: icons.contact,
  timeoutMs: 5_000,
  approval: {
    preview: async ({ customer_id, ...wanted }, ctx) => {
      const { customer, changes } = await contactChanges(ctx, customer_id, wanted);
      const list = changes.map(([f, from, to]) => `${f} ${from === null ? '(none)' : `"${from}"`} → "${to}"`);
      return `Change the contact details of ${customer.name} (${customer_id}): ${list.join('; ')}.`;
    },
  },
  handler: async ({ customer_id, ...wanted }, ctx) => {
    const { changes } = await contactChanges(ctx, customer_id, wanted);
    await updateContact(ctx.sql, customer_id, Object.fromEntries(changes.map(([f, , to]) => [f, to])));
    return { customer_id, changed: changes.map(([f]) => f) };
  },
});
