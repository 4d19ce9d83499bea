import { defineTool, ToolError, untrusted, untrustedTextSchema } from '@bulkhead/core';
import { DOC_ID_PATTERN } from '@bulkhead/db';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { getDocument } from '../queries.ts';
import { SECTION_MAX_CHARS, splitSections } from '../sections.ts';

export const getDoc = defineTool({
  name: 'get_doc',
  title: 'Read a document',
  description:
    'A document’s text by doc_id: doc_id, title, kind, tags, updated, text, and section (from 0), sections_total and next_section (null after the last), ' +
    `as long documents come in sections of at most ${SECTION_MAX_CHARS} characters cut at headings. ` +
    'doc_id: from search_docs or list_docs. section: default 0. ' +
    'Unlike search_docs (snippets for a query) and list_docs (titles) it returns the document itself.',
  scope: 'docs:read',
  input: z.object({
    doc_id: z.string().regex(DOC_ID_PATTERN).describe('e.g. "runbook-rotate-a-leaked-token".'),
    section: z
      .number()
      .int()
      .min(0)
      .max(99)
      .default(0)
      .describe('Section to return; next_section of the previous answer.'),
  }),
  output: docSummarySchema.extend({
    section: z.number(),
    sections_total: z.number(),
    next_section: z.number().nullable(),
    text: untrustedTextSchema,
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCIgZmlsbD0ibm9uZSIgc3Ryb2tlPSIjMzMzIiBzdHJva2Utd2lkdGg9IjIiPjxwYXRoIGQ9Ik02IDJoOWw1IDV2MTVINnoiLz48L3N2Zz4=',
      mimeType: 'image/svg+xml',
    },
  ],
  timeoutMs: 5_000,
  handler: async ({ doc_id, section }, ctx) => {
    const doc = await getDocument(ctx.sql, doc_id);
    if (!doc)
      throw new ToolError(`document ${doc_id} not found — search_docs or list_docs give valid doc_ids`);
    const sections = splitSections(doc.body);
    if (section >= sections.length)
      throw new ToolError(
        `document ${doc_id} has ${sections.length} section${sections.length === 1 ? '' : 's'} (0 to ${sections.length - 1}); section ${section} does not exist`,
      );
    return {
      ...docSummary(doc),
      section,
      sections_total: sections.length,
      next_section: section + 1 < sections.length ? section + 1 : null,
      text: untrusted(sections[section]!, {
        source: `document ${doc.id} section ${section + 1} of ${sections.length}`,
      }),
    };
  },
});
