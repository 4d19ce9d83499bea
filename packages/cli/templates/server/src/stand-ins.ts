// Not a template: stand-ins for the code `bulkhead new server` computes (from its options and the
// OpenAPI operations chosen), each typed as the code that replaces it, so that the templates around
// them type-check. The generator drops every import of this file (see packages/cli/templates/README.md).
import { z } from 'zod';

/** A drafted tool's input: `z.strictObject({ … })` of its arguments. */
export const __INPUT__ = z.strictObject({ id: z.string(), note: z.string().optional() });
/** A read's request options: `{ params: { … }, query: { … } }`; none, the comma before it included, when it has neither. */
export const __REQUEST_OPTIONS__ = { params: { id: 'T-1' }, query: { limit: 10 } };
/** A gated tool's path parameters, query and JSON body, as the outbox sends them. */
export const __PARAMS__: Record<string, string> = { id: 'T-1' };
export const __QUERY__: Record<string, string> = { limit: '10' };
export const __JSON__: unknown = { note: 'a note' };
/** A gated tool's preview: a template literal naming the operation and every argument. */
export const __PREVIEW__ = 'Delete a ticket on the Desk API (DELETE /tickets/{id}): id T-1.';
/** A gated tool's method (a quoted literal) and its annotations, which follow from it. */
export const __GATED_METHOD__ = 'DELETE';
export const __ANNOTATIONS__ = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: true,
};
/** What a tool's test calls it with, what the stub answers and with which status, and its size. */
export const __EXAMPLE_ARGS__: Record<string, unknown> = { id: 'T-1' };
export const __EXAMPLE_ANSWER__: unknown = { id: 'T-1', subject: 'Printer on fire' };
export const __STATUS__ = 200;
export const __ANSWER_BYTES__ = 41;
/** The JSON body a gated tool's upstream receives once approved (`undefined` when none). */
export const __SENT_BODY__: unknown = undefined;
/** The test token's options: a customer for a customer-bound server; none, the comma before it included, otherwise. */
export const __TOKEN_OPTIONS__ = { customerId: 'C-1001' };
/** What the stand-in upstream of src/testing/upstreams.ts answers every GET with. */
export const __UPSTREAM_ANSWER__: unknown = 'all systems operational';
