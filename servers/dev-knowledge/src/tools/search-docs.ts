import { defineTool, limitArg, svgIcon, untrusted, untrustedTextRef } from '@bulkhead/core';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { DOC_KINDS, searchDocuments } from '../queries.ts';

export const searchDocs = defineTool({
  name: 'search_docs',
  title: 'Search documents',
  description:
    'Full-text search over the engineering documents. Returns hits ranked by relevance ' +
    '(doc_id, title, kind, tags, updated, snippet of the matching text), count, truncated. ' +
    'query: English words ("a phrase", or, -word work); hits have all words, else any. kind: default all. limit: default 5, max 20. ' +
    'Snippets only: get_doc returns a whole document, list_docs browses by kind and tag.',
  scope: 'docs:read',
  input: z.strictObject({
    query: z
      .string()
      .trim()
      .min(2)
      .max(200)
      .describe('Words or a quoted phrase, e.g. "rotate leaked token".'),
    kind: z.enum(DOC_KINDS).optional().describe('Only documents of this kind.'),
    limit: limitArg(5, 20).describe('Hits to return.'),
  }),
  output: z.object({
    hits: z.array(docSummarySchema.extend({ snippet: untrustedTextRef })),
    count: z.number(),
    truncated: z.boolean(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: svgIcon(
    "<g fill='none' stroke='#333' stroke-width='2'><circle cx='10' cy='10' r='6'/><path d='M14 14l6 6'/></g>",
    24,
  ),
  timeoutMs: 5_000,
  handler: async ({ query, kind, limit }, ctx) => {
    let rows = await searchDocuments(ctx.sql, { query, kind, limit: limit + 1 });
    if (!rows.length) rows = await searchDocuments(ctx.sql, { query, kind, limit: limit + 1, anyWord: true });
    const hits = rows.slice(0, limit).map((r) => ({
      ...docSummary(r),
      snippet: untrusted(r.snippet, { source: `document ${r.id}` }),
    }));
    return { hits, count: hits.length, truncated: rows.length > limit };
  },
});
