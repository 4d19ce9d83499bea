import { z } from 'zod';
import { DOC_KINDS, type DocSummary } from './queries.ts';

/** The fields every tool returns about a document (output schema). */
export const docSummarySchema = z.object({
  doc_id: z.string(),
  title: z.string(),
  kind: z.enum(DOC_KINDS),
  tags: z.array(z.string()),
  updated: z.string().nullable(),
});

/** A stored document's summary as the tools return it. */
export function docSummary(row: DocSummary): z.output<typeof docSummarySchema> {
  return { doc_id: row.id, title: row.title, kind: row.kind, tags: row.tags, updated: row.updatedOn };
}
