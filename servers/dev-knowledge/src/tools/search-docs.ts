import { defineTool, untrusted, untrustedTextSchema } from '@bulkhead/core';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { DOC_KINDS, searchDocuments } from '../queries.ts';

export const searchDocs = defineTool({
  name: 'search_docs',
  title: 'Search documents',
  description:
    'Full-text search over the engineering documents: ' +
    'hits ranked by relevance, each with doc_id, title, kind, tags, updated and a snippet of the matching text, plus count and truncated. ' +
    'query: English words ("a phrase", or, -word work); hits have all words, else any. kind: default all. limit: default 5, at most 20. ' +
    'Snippets only: get_doc returns a document’s full text, list_docs browses by kind and tag without a query.',
  scope: 'docs:read',
  input: z.object({
    query: z
      .string()
      .trim()
      .min(2)
      .max(200)
      .describe('Words or a quoted phrase, e.g. "rotate leaked token".'),
    kind: z.enum(DOC_KINDS).optional().describe('Only documents of this kind.'),
    limit: z.number().int().min(1).max(20).default(5).describe('Hits to return.'),
  }),
  output: z.object({
    hits: z.array(docSummarySchema.extend({ snippet: untrustedTextSchema })),
    count: z.number(),
    truncated: z.boolean(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCIgZmlsbD0ibm9uZSIgc3Ryb2tlPSIjMzMzIiBzdHJva2Utd2lkdGg9IjIiPjxjaXJjbGUgY3g9IjEwIiBjeT0iMTAiIHI9IjYiLz48cGF0aCBkPSJNMTQgMTRsNiA2Ii8+PC9zdmc+',
      mimeType: 'image/svg+xml',
    },
  ],
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
