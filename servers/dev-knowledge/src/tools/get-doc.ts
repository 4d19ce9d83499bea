import { defineTool, svgIcon, ToolError, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { docIdArg } from '@bulkhead/domain';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { getDocument } from '../queries.ts';
import { SECTION_MAX_CHARS, splitSections } from '../sections.ts';

export const getDoc = defineTool({
  name: 'get_doc',
  title: 'Read a document',
  description:
    'Returns a document by doc_id: doc_id, title, kind, tags, updated, text, section (from 0), sections_total, next_section (null after the last); ' +
    `long documents come in sections of at most ${SECTION_MAX_CHARS} characters cut at headings. ` +
    'doc_id: from search_docs or list_docs. section: default 0. ' +
    'Unlike search_docs (snippets) and list_docs (titles) it returns the text.',
  scope: 'docs:read',
  input: z.strictObject({
    doc_id: docIdArg.describe('e.g. "runbook-rotate-a-leaked-token".'),
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
    text: untrustedTextRef,
  }),
  annotations: READ_ONLY,
  icons: svgIcon("<path d='M6 2h9l5 5v15H6z' fill='none' stroke='#333' stroke-width='2'/>", 24),
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
