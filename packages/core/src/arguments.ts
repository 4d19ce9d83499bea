import { DOC_ID_PATTERN } from '@bulkhead/db';
import { z } from 'zod';
import type { ToolIcon } from './define-tool.ts';
import { ToolError } from './errors.ts';
import { untrustedTextSchema } from './untrusted.ts';

// The platform's argument convention: the same name means the same thing, in the same
// shape, on every server (customer_id, invoice_number, key, doc_id, limit, offset), so a
// model that learned one server reads the next without surprises. The patterns mirror
// the checks of the business tables (migrations 0005 and 0009). Each tool adds its own
// `.describe()`, which says what the argument does for that tool.

/** A customer number, `C-1001`. */
export const customerIdArg = z.string().regex(/^C-\d{4}$/);

/** An invoice number, `R-2026-0001`. */
export const invoiceNumberArg = z.string().regex(/^R-\d{4}-\d{4}$/);

/** A ticket key, `T-1001`: four digits or more, so numbering goes on past T-9999. */
export const ticketKeyArg = z.string().regex(/^T-\d{4,}$/);

/** A knowledge document id, its file name without `.md`: `runbook-rotate-a-leaked-token`. */
export const docIdArg = z.string().regex(DOC_ID_PATTERN);

/** A page size: `defaultValue` when left out, at most `max`. */
export function limitArg(defaultValue: number, max: number) {
  return z
    .number()
    .int()
    .min(1)
    .max(max)
    .default(defaultValue)
    .describe(`Default ${defaultValue}, max ${max}.`);
}

/** Rows to skip before a page, default 0; {@link pageCheck} refuses one past the end. */
export const offsetArg = z.number().int().min(0).max(100_000).default(0).describe('Rows to skip, default 0.');

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

/**
 * A tool or server icon as an inline SVG data URI (no request leaves the
 * client). `body` is the SVG's content in a `size`×`size` view box; "<", ">"
 * and "#" are percent-encoded, which is shorter than base64.
 */
export function svgIcon(body: string, size = 16): ToolIcon[] {
  const markup = `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 ${size} ${size}'>${body}</svg>`;
  return [{ src: `data:image/svg+xml,${markup.replace(/[<>#]/g, encodeURIComponent)}` }];
}
