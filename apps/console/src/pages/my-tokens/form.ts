import { field } from '../../form-field.ts';
import type { OAuthServer } from '../../oauth/context.ts';
import { DEFAULT_EXPIRY, EXPIRY_CHOICES } from '../issue-token/form.ts';

/** The lifetimes a token of one's own may have: the operators' choices but `never` (the database holds it to a year). */
export const MY_EXPIRY_CHOICES = EXPIRY_CHOICES.filter(
  (e): e is Extract<(typeof EXPIRY_CHOICES)[number], { days: number }> => e.days !== null,
);

export { DEFAULT_EXPIRY };

/** The issue form's fields as posted (parsed with `all: true`, so that ticked scopes arrive as a list). */
export interface MyTokenFields {
  server: string;
  label: string;
  scopes: string[];
  customer: string;
  expires: string;
}

export function postedFields(form: Record<string, unknown>): MyTokenFields {
  const scopes = form.scopes;
  return {
    server: field(form, 'server') ?? '',
    label: field(form, 'label')?.trim() ?? '',
    scopes: (Array.isArray(scopes) ? scopes : [scopes]).filter((s): s is string => typeof s === 'string'),
    customer: field(form, 'customer')?.trim() ?? '',
    expires: field(form, 'expires') ?? '',
  };
}

/** What the token will be, once the fields are checked against the server's manifest. */
export interface CheckedMyToken {
  label: string;
  scopes: string[];
  customerId: string | null;
  expiresAt: Date;
}

/**
 * Checks the fields against the server's manifest, as the operators' form does: a label, scopes of this
 * server (at least one), a customer for a customer-bound server and for no other, a lifetime offered.
 * Whether the person may hold those scopes is the database's to decide, not this function's.
 */
export function checkMyTokenFields(
  server: OAuthServer,
  fields: MyTokenFields,
  now = new Date(),
): { ok: true; token: CheckedMyToken } | { ok: false; error: string } {
  const refuse = (error: string) => ({ ok: false as const, error });
  if (!fields.label)
    return refuse('Give a label: which client will use the token, e.g. Cursor on my laptop.');
  if (fields.label.length > 200) return refuse('The label is longer than 200 characters.');
  const scopes = [...new Set(fields.scopes)];
  if (!scopes.length) return refuse('Tick at least one scope.');
  const unknown = scopes.filter((s) => !server.scopes.includes(s));
  if (unknown.length) return refuse(`${unknown.join(', ')}: not a scope of ${server.name}.`);
  if (server.customerBound && !fields.customer)
    return refuse(`Choose a customer: a ${server.name} token is bound to one customer.`);
  if (!server.customerBound && fields.customer)
    return refuse(`${server.name} tokens are not bound to a customer; leave the customer empty.`);
  const expiry = MY_EXPIRY_CHOICES.find((e) => e.value === fields.expires);
  if (!expiry) return refuse('Choose how long the token lives (a year at most).');
  return {
    ok: true,
    token: {
      label: fields.label,
      scopes: server.scopes.filter((s) => scopes.includes(s)),
      customerId: fields.customer || null,
      expiresAt: new Date(now.getTime() + expiry.days * 86_400_000),
    },
  };
}
