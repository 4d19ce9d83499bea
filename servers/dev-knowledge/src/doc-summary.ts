import { untrusted, untrustedTextRef, untrustedTextSchema } from '@bulkhead/core';
import { z } from 'zod';
import { DOC_KINDS, type DocSummary } from './queries.ts';

/**
 * The fields every tool returns about a document (output schema). The title
 * comes from the file's front matter, so it is untrusted text like the body;
 * tags need no marking, ingest admits only `[a-z0-9-]` (DOC_TAG_PATTERN).
 */
export const docSummarySchema = z.object({
  doc_id: z.string(),
  title: untrustedTextRef,
  kind: z.enum(DOC_KINDS),
  tags: z.array(z.string()),
  updated: z.string().nullable(),
});

/**
 * The same for list_docs, whose output has no other untrusted field: there the
 * schema inline is shorter than a `$defs` entry and its `$ref` (tools/list is
 * paid for on every request).
 */
export const docListItemSchema = docSummarySchema.extend({ title: untrustedTextSchema });

/** A stored document's summary as the tools return it. */
export function docSummary(row: DocSummary): z.input<typeof docSummarySchema> {
  return {
    doc_id: row.id,
    title: untrusted(row.title, { source: `document ${row.id} title` }),
    kind: row.kind,
    tags: row.tags,
    updated: row.updatedOn,
  };
}
