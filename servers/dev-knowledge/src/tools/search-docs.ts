import { defineTool, untrusted, untrustedTextSchema } from '@bulkhead/core';
import { z } from 'zod';
import { DOC_KINDS, searchDocuments } from '../queries.ts';

export const searchDocs = defineTool({
  name: 'search_docs',
  title: 'Search engineering documents',
  description:
    'Full-text search over the engineering documents (ADRs, runbooks, guides, API references). ' +
    'Returns hits ranked by relevance, each with doc_id, title, kind, tags, updated date and a short snippet around the matching words, ' +
    'plus count and truncated. query: words to look for (English stemming, "or" and quoted phrases work). ' +
    'kind: only documents of this kind (default: all kinds). limit: hits to return, default 5, at most 20. ' +
    'Returns snippets only, not whole documents: get_doc returns a document’s full text by doc_id, and list_docs browses by kind and tag without a query.',
  scope: 'docs:read',
  input: z.object({
    query: z
      .string()
      .trim()
      .min(2)
      .max(200)
      .describe('Words or a quoted phrase to search for, e.g. "rotate database credentials".'),
    kind: z
      .enum(DOC_KINDS)
      .optional()
      .describe('Restrict hits to one kind of document; all kinds when omitted.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(20)
      .default(5)
      .describe('How many hits to return (default 5, maximum 20).'),
  }),
  output: z.object({
    hits: z.array(
      z.object({
        doc_id: z.string(),
        title: z.string(),
        kind: z.enum(DOC_KINDS),
        tags: z.array(z.string()),
        updated: z.string().nullable(),
        rank: z.number(),
        snippet: untrustedTextSchema,
      }),
    ),
    count: z.number().int(),
    truncated: z.boolean(),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: [
    {
      src: 'data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCI+PGNpcmNsZSBjeD0iMTAiIGN5PSIxMCIgcj0iNiIgZmlsbD0ibm9uZSIgc3Ryb2tlPSIjMzMzIiBzdHJva2Utd2lkdGg9IjIiLz48cGF0aCBkPSJNMTQgMTRsNiA2IiBzdHJva2U9IiMzMzMiIHN0cm9rZS13aWR0aD0iMiIvPjwvc3ZnPg==',
      mimeType: 'image/svg+xml',
      sizes: ['any'],
    },
  ],
  timeoutMs: 5_000,
  handler: async ({ query, kind, limit }, ctx) => {
    const rows = await searchDocuments(ctx.sql, { query, kind, limit: limit + 1 });
    const hits = rows.slice(0, limit).map((r) => ({
      doc_id: r.id,
      title: r.title,
      kind: r.kind,
      tags: r.tags,
      updated: r.updatedOn,
      rank: Math.round(r.rank * 1000) / 1000,
      snippet: untrusted(r.snippet, { source: `document ${r.id}` }),
    }));
    return { hits, count: hits.length, truncated: rows.length > limit };
  },
});
