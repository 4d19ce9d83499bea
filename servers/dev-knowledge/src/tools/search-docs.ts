import { defineTool, limitArg, svgIcon, untrusted, untrustedTextRef, READ_ONLY } from '@bulkhead/core';
import { z } from 'zod';
import { docSummary, docSummarySchema } from '../doc-summary.ts';
import { DOC_KINDS, rankDocuments, snippets } from '../queries.ts';

/** Hits whose snippets are made in one query, between two progress notifications. */
const SNIPPET_BATCH = 4;

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
  annotations: READ_ONLY,
  icons: svgIcon(
    "<g fill='none' stroke='#333' stroke-width='2'><circle cx='10' cy='10' r='6'/><path d='M14 14l6 6'/></g>",
    24,
  ),
  timeoutMs: 5_000,
  handler: async ({ query, kind, limit }, ctx) => {
    let anyWord = false;
    let rows = await rankDocuments(ctx.sql, { query, kind, limit: limit + 1 });
    if (!rows.length) {
      ctx.progress(1, undefined, 'no document has every word; ranking by any of them');
      anyWord = true;
      rows = await rankDocuments(ctx.sql, { query, kind, limit: limit + 1, anyWord });
    }
    const found = rows.slice(0, limit);
    // Ranking takes milliseconds; the snippets read every hit's whole body, and on a knowledge base of
    // long documents they are most of the wait: reported batch by batch.
    const total = 2 + found.length;
    ctx.progress(2, total, `${found.length} hits ranked; making snippets`);
    const text = new Map<string, string>();
    for (let done = 0; done < found.length; done += SNIPPET_BATCH) {
      const ids = found.slice(done, done + SNIPPET_BATCH).map((r) => r.id);
      for (const [id, snippet] of await snippets(ctx.sql, { ids, query, anyWord })) text.set(id, snippet);
      const made = Math.min(done + SNIPPET_BATCH, found.length);
      ctx.progress(2 + made, total, `snippets for ${made} of ${found.length} hits`);
    }
    const hits = found.map((r) => ({
      ...docSummary(r),
      snippet: untrusted(text.get(r.id) ?? '', { source: `document ${r.id}` }),
    }));
    return { hits, count: hits.length, truncated: rows.length > limit };
  },
});
