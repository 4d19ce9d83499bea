import { defineTool, limitArg, offsetArg, pageCheck, svgIcon, ToolError, READ_ONLY } from '@bulkhead/core';
import { DOC_TAG_PATTERN } from '@bulkhead/domain';
import { z } from 'zod';
import { docListItemSchema, docSummary } from '../doc-summary.ts';
import { DOC_KINDS, listDocuments, tagsInUse } from '../queries.ts';

/** How many tags the unknown-tag error names; the most used come first. */
const MAX_TAGS_SHOWN = 60;

export const listDocs = defineTool({
  name: 'list_docs',
  title: 'List documents',
  description:
    'Engineering documents by kind and tag, ordered by doc_id. Returns items (doc_id, title, kind, tags, updated; no text), ' +
    'count, total (matching), truncated, next_offset (null on the last page). ' +
    'kind: default all. tag: default any. limit: default 20, max 50. offset: default 0. ' +
    'Unlike search_docs it takes no query and does not rank; get_doc returns a document’s text.',
  scope: 'docs:read',
  input: z.strictObject({
    kind: z.enum(DOC_KINDS).optional().describe('Only documents of this kind.'),
    tag: z
      .string()
      .regex(DOC_TAG_PATTERN)
      .optional()
      .describe('Only documents with this tag, e.g. "tokens".'),
    limit: limitArg(20, 50),
    offset: offsetArg,
  }),
  output: z.object({
    items: z.array(docListItemSchema),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
    next_offset: z.number().nullable(),
  }),
  annotations: READ_ONLY,
  icons: svgIcon("<path d='M4 6h16M4 12h16M4 18h16' stroke='#333' stroke-width='2'/>", 24),
  timeoutMs: 5_000,
  handler: async ({ kind, tag, limit, offset }, ctx) => {
    const { total, rows } = await listDocuments(ctx.sql, { kind, tag, limit, offset });
    if (total === 0 && !kind && !tag)
      throw new ToolError(
        'the knowledge base is empty — an operator loads documents with `bulkhead kb ingest`',
      );
    if (total === 0 && tag) {
      const known = (await tagsInUse(ctx.sql)).map((t) => t.tag);
      if (!known.includes(tag)) {
        const shown = known.slice(0, MAX_TAGS_SHOWN).join(', ');
        const more = known.length > MAX_TAGS_SHOWN ? `, … (${known.length} in all)` : '';
        throw new ToolError(`no document is tagged "${tag}" — tags in use, most used first: ${shown}${more}`);
      }
    }
    pageCheck(offset, total, 'document');
    const end = offset + rows.length;
    return {
      items: rows.map(docSummary),
      count: rows.length,
      total,
      truncated: end < total,
      next_offset: end < total ? end : null,
    };
  },
});
