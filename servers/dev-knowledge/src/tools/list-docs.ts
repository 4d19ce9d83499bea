import { defineTool, ToolError } from '@bulkhead/core';
import { DOC_TAG_PATTERN } from '@bulkhead/db';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { DOC_KINDS, listDocuments, tagsInUse } from '../queries.ts';

/** How many tags the unknown-tag error names; the most used come first. */
const MAX_TAGS_SHOWN = 60;

export const listDocs = defineTool({
  name: 'list_docs',
  title: 'List documents',
  description:
    'Engineering documents by kind and tag, ordered by doc_id: items (doc_id, title, kind, tags, updated; no text), ' +
    'count, total (matching), truncated, next_offset (null on the last page). ' +
    'kind: default all. tag: default any. limit: default 20, at most 50. offset: default 0. ' +
    'Unlike search_docs it takes no query and does not rank; get_doc returns a document’s text.',
  scope: 'docs:read',
  input: z.object({
    kind: z.enum(DOC_KINDS).optional().describe('Only documents of this kind.'),
    tag: z
      .string()
      .regex(DOC_TAG_PATTERN)
      .optional()
      .describe('Only documents with this tag, e.g. "tokens".'),
    limit: z.number().int().min(1).max(50).default(20).describe('Documents to return.'),
    offset: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(0)
      .describe('Documents to skip; next_offset of the previous page.'),
  }),
  output: z.object({
    items: z.array(docSummarySchema),
    count: z.number(),
    total: z.number(),
    truncated: z.boolean(),
    next_offset: z.number().nullable(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCIgc3Ryb2tlPSIjMzMzIiBzdHJva2Utd2lkdGg9IjIiPjxwYXRoIGQ9Ik00IDZoMTZNNCAxMmgxNk00IDE4aDE2Ii8+PC9zdmc+',
      mimeType: 'image/svg+xml',
    },
  ],
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
    if (total > 0 && offset >= total)
      throw new ToolError(
        `offset ${offset} is past the end: ${total} document${total === 1 ? ' matches' : 's match'} — use an offset below ${total}`,
      );
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
