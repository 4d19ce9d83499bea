import { defineTool, lineArg, quoted, ToolError, type ToolContext } from '@bulkhead/core';
import { customerIdArg } from '@bulkhead/domain';
import { z } from 'zod';
import {
  lockCustomerContact,
  updateCustomerContact as updateContact,
  type ContactFields,
} from '../queries.ts';
import { GATED, icons, notFound } from './shared.ts';

const FIELDS = ['email', 'phone', 'street', 'postal_code', 'city'] as const;

/** The fields that change, each with the value it replaces (null: never entered) and the new one. */
type Changes = Partial<Record<(typeof FIELDS)[number], { from: string | null; to: string }>>;

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
  description: `Changes the given fields (email, phone, street, postal_code, city) of customer customer_id. ${GATED} get_customer reads them.`,
  scope: 'customers:write',
  input: z
    .strictObject({
      customer_id: customerIdArg.describe('e.g. C-1001.'),
      email: z
        .string()
        .trim()
        .refine((v) => v.length <= 254, 'at most 254 characters')
        .refine((v) => /^[^\s@]+@[^\s@]+\.[A-Za-z]{2,}$/.test(v), 'an e-mail address, name@example.com')
        .optional()
        .describe('New e-mail.'),
      phone: z
        .string()
        .trim()
        .refine((v) => /^\+?[0-9 ()/-]{5,30}$/.test(v), 'a phone number: digits, spaces, + ( ) / -')
        .optional()
        .describe('New phone.'),
      street: lineArg(2, 200).optional().describe('New street, number.'),
      postal_code: z
        .string()
        .trim()
        .refine((v) => /^[A-Za-z0-9 -]{3,10}$/.test(v), '3 to 10 letters, digits, spaces or -')
        .optional()
        .describe('New postal code.'),
      city: lineArg(2, 100).optional().describe('New city.'),
    })
    .refine((a) => FIELDS.some((f) => a[f] !== undefined), {
      message: `at least one of ${FIELDS.join(', ')}`,
    }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  icons: icons.contact,
  timeoutMs: 5_000,
  approval: {
    // Each changed field with the value it replaces: a change by someone else in between refuses it.
    values: async ({ customer_id, ...wanted }, ctx) => {
      const { changes } = await contactChanges(ctx, customer_id, wanted);
      return Object.fromEntries(changes.map(([f, from, to]) => [f, { from, to }])) as Changes;
    },
    preview: async ({ customer_id }, ctx, v) => {
      const customer = await lockCustomerContact(ctx.sql, customer_id);
      const list = FIELDS.flatMap((f) => {
        const c = v[f];
        return c ? [`${f} ${c.from === null ? '(none)' : quoted(c.from)} → ${quoted(c.to)}`] : [];
      });
      return `Change the contact details of ${quoted(customer!.name)} (${customer_id}): ${list.join('; ')}.`;
    },
  },
  handler: async ({ customer_id }, ctx) => {
    if (!ctx.approval) throw new Error('update_customer_contact runs only as an approved action');
    // Read again by the kit just now and found as approved: write exactly the approved new values.
    const v = ctx.approval.values;
    const changed = FIELDS.filter((f) => v[f]); // in FIELDS order: jsonb keeps its own key order
    await updateContact(ctx.sql, customer_id, Object.fromEntries(changed.map((f) => [f, v[f]!.to])));
    return { customer_id, changed };
  },
});
