import { personNameProblem, tidyPersonName } from '@bulkhead/core/operator';
import { field } from '../../form-field.ts';
import type { OAuthServer } from '../../oauth/context.ts';

/** The lifetimes the form offers (the CLI's `--expires` takes any duration or date). */
export const EXPIRY_CHOICES = [
  { value: '7d', words: '7 days', days: 7 },
  { value: '30d', words: '30 days', days: 30 },
  { value: '90d', words: '90 days', days: 90 },
  { value: '180d', words: '180 days', days: 180 },
  { value: '365d', words: 'a year', days: 365 },
  { value: 'never', words: 'never', days: null },
] as const;

export const DEFAULT_EXPIRY = '90d';

/** The form's fields as typed, for showing the form again with an error. */
export interface IssueFields {
  label: string;
  person: string;
  scopes: string[];
  customer: string;
  expires: string;
}

/** The form's fields as a fresh form shows them: every scope of the server ticked, 90 days. */
export function freshFields(server: OAuthServer): IssueFields {
  return { label: '', person: '', scopes: [...server.scopes], customer: '', expires: DEFAULT_EXPIRY };
}

/** The fields of a posted form (parsed with `all: true`, so that ticked scopes arrive as a list). */
export function postedFields(form: Record<string, unknown>): IssueFields {
  const scopes = form.scopes;
  return {
    label: field(form, 'label')?.trim() ?? '',
    person: field(form, 'person')?.trim() ?? '',
    scopes: (Array.isArray(scopes) ? scopes : [scopes]).filter((s): s is string => typeof s === 'string'),
    customer: field(form, 'customer')?.trim() ?? '',
    expires: field(form, 'expires') ?? '',
  };
}

/** What the token will be, once the fields are checked against the server's manifest. */
export interface CheckedIssue {
  label: string;
  owner: string;
  scopes: string[];
  customerId: string | null;
  expiresAt: Date | null;
}

/**
 * Checks the fields as `bulkhead tokens issue` checks its options: a label and a person (stored in its
 * tidy spelling, refused when it mixes scripts), scopes of
 * this server only (at least one), a customer for a customer-bound server and for no other. Whether
 * the customer exists is the caller's to ask the database.
 */
export function checkIssueFields(
  server: OAuthServer,
  fields: IssueFields,
  now = new Date(),
): { ok: true; issue: CheckedIssue } | { ok: false; error: string } {
  const refuse = (error: string) => ({ ok: false as const, error });
  if (!fields.label) return refuse('Give a label: which client or person will use the token.');
  if (fields.label.length > 200) return refuse('The label is longer than 200 characters.');
  if (!fields.person)
    return refuse('Name the person the token is issued to, so that it is revoked when they leave.');
  const person = tidyPersonName(fields.person);
  const problem = personNameProblem(person);
  if (problem) return refuse(`The person's name: ${problem}.`);
  if (person.length > 200) return refuse('The person is longer than 200 characters.');
  const scopes = [...new Set(fields.scopes)];
  if (!scopes.length) return refuse('Tick at least one scope.');
  const unknown = scopes.filter((s) => !server.scopes.includes(s));
  if (unknown.length) return refuse(`${unknown.join(', ')}: not a scope of ${server.name}.`);
  if (server.customerBound && !fields.customer)
    return refuse(`Choose a customer: a ${server.name} token is bound to one customer.`);
  if (!server.customerBound && fields.customer)
    return refuse(`${server.name} tokens are not bound to a customer; leave the customer empty.`);
  const expiry = EXPIRY_CHOICES.find((e) => e.value === fields.expires);
  if (!expiry) return refuse('Choose how long the token lives.');
  return {
    ok: true,
    issue: {
      label: fields.label,
      owner: person,
      scopes: server.scopes.filter((s) => scopes.includes(s)),
      customerId: fields.customer || null,
      expiresAt: expiry.days === null ? null : new Date(now.getTime() + expiry.days * 86_400_000),
    },
  };
}
