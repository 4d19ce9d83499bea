import { z } from 'zod';
import { ToolError } from './errors.ts';
import { untrustedTextSchema } from '../text-safety/untrusted/wrap.ts';

// The kit's generic arguments: pages, free text, dates. The same name means the same thing on every
// server (limit, offset), and a sanity bound is enforced without being shown, since every tool would
// pay for the number on every tools/list. Business arguments (customer_id, invoice_number, key,
// doc_id) live with the servers that share them, in @bulkhead/domain.

/** True for a real day written `YYYY-MM-DD` (2026-02-30 is not one). */
function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const day = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === value;
}

/** A calendar date, `2026-03-02`: checked by the kit, not shown as a pattern (each tool's description gives an example). */
export const dateArg = z.string().refine(isCalendarDate, 'a date written YYYY-MM-DD');

/**
 * Free text of `min` to `max` characters, trimmed. The upper bound is a sanity
 * limit the kit enforces without showing it (no model writes 5,000 characters by
 * accident, and every tool would pay for the number on every tools/list); so is a
 * lower bound of one or two.
 */
export function textArg(min: number, max: number) {
  const text = z.string().trim();
  // A lower bound of one or two characters says nothing a model does not know either.
  return (min > 2 ? text.min(min) : text.refine((v) => v.length >= min, `at least ${min} characters`)).refine(
    (v) => v.length <= max,
    `at most ${max} characters`,
  );
}

const LINE_BREAK = /[\r\n\t\v\f\u0085\u2028\u2029]/;

/**
 * Free text that stays on one line (a subject, a street): trimmed, `min` to
 * `max` characters, no line breaks or tabs inside. Such text ends up in mail
 * headers and one-line displays, where a line break splits or forges a line.
 * The check is a refinement, so it costs nothing in tools/list.
 */
export function lineArg(min: number, max: number) {
  return textArg(min, max).refine((s) => !LINE_BREAK.test(s), 'one line: no line breaks or tabs');
}

/** A page size: `defaultValue` when left out, at most `max`. */
export function limitArg(defaultValue: number, max: number) {
  return z
    .number()
    .int()
    .refine((v) => v >= 1, 'a number >= 1')
    .max(max)
    .default(defaultValue)
    .describe(`Default ${defaultValue}.`);
}

/** Rows to skip before a page, default 0; {@link pageCheck} refuses one past the end. */
export const offsetArg = z
  .number()
  .int()
  .refine((v) => v >= 0, 'a number >= 0')
  .refine((v) => v <= 100_000, 'a number <= 100000')
  .default(0)
  .describe('Default 0.');

/**
 * Refuses an offset past the end of a non-empty result, in the same words on
 * every server: an empty page there would read as "nothing matches". An empty
 * result at any offset is left alone: that is an answer, not a mistake.
 * `noun` names what is counted (`invoice` → "12 invoices match").
 */
export function pageCheck(offset: number, total: number, noun = 'result'): void {
  if (total > 0 && offset >= total)
    throw new ToolError(
      `offset ${offset} is past the end: ${total} ${noun}${total === 1 ? ' matches' : 's match'} — use an offset below ${total}`,
    );
}

/**
 * The kit's untrusted-text schema under an id, for output schemas: tools/list
 * is paid for on every request, and with the id an output schema holds the
 * definition once (`$defs`) and a short `$ref` at each field that uses it.
 */
export const untrustedTextRef = untrustedTextSchema.meta({ id: 'untrusted_text' });
