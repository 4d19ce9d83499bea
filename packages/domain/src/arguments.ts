import { z } from 'zod';
import { DOC_ID_PATTERN } from './knowledge/documents.ts';

// The business arguments: the same name means the same thing, in the same shape, on every
// server (customer_id, invoice_number, key, doc_id), so a model that learned one server reads the
// next without surprises. The formats mirror the checks of the business tables (migrations 0005
// and 0009); they are checked here rather than shown as regular expressions, because an example
// in the description ("e.g. C-1001") tells a model as much for a third of the characters on every
// tools/list. Each tool adds its own `.describe()`, which says what the argument does for that
// tool and gives the example. The kit's generic arguments (limit, offset, text) are in @bulkhead/core.

/** A string in a fixed format: refused with `expected` ("a customer number like C-1001") otherwise. */
function formatted(pattern: RegExp, expected: string) {
  return z.string().refine((v) => pattern.test(v), expected);
}

/** A customer number, `C-1001`. */
export const customerIdArg = formatted(/^C-\d{4}$/, 'a customer number like C-1001');

/** An invoice number, `R-2026-0001`. */
export const invoiceNumberArg = formatted(/^R-\d{4}-\d{4}$/, 'an invoice number like R-2026-0001');

/** A ticket key, `T-1001`: four digits or more, so numbering goes on past T-9999. */
export const ticketKeyArg = formatted(/^T-\d{4,}$/, 'a ticket key like T-1001');

/** A knowledge document id, its file name without `.md`: `runbook-rotate-a-leaked-token`. */
export const docIdArg = formatted(DOC_ID_PATTERN, 'a document id like runbook-rotate-a-leaked-token');

/** One message of a ticket's thread by its number `n` (1 = the first); the bound is enforced, not listed. */
export const messageArg = z
  .number()
  .int()
  .refine((v) => v >= 1 && v <= 100_000, 'a message number from 1 to 100000')
  .optional()
  .describe('One message by its n.');
