import type { Sql } from '@bulkhead/db';

/** The kinds of engineering document. */
export const DOC_KINDS = ['adr', 'runbook', 'guide', 'api'] as const;
export type DocKind = (typeof DOC_KINDS)[number];

/** One search hit. */
export interface DocHit {
  id: string;
  title: string;
  kind: DocKind;
  tags: string[];
  updatedOn: string | null;
  rank: number;
  snippet: string;
}

/** Ranked full-text search; `websearch_to_tsquery` accepts quotes, "or" and "-word" and never fails on user text. */
export async function searchDocuments(
  sql: Sql,
  { query, kind, limit }: { query: string; kind: DocKind | undefined; limit: number },
): Promise<DocHit[]> {
  return sql<DocHit[]>`
    select id, title, kind, tags, to_char(updated_on, 'YYYY-MM-DD') as "updatedOn",
      ts_rank_cd(search, q)::float8 as rank,
      ts_headline('english', body, q, 'MaxWords=30, MinWords=12, MaxFragments=2, StartSel=«, StopSel=»') as snippet
    from kb_documents, websearch_to_tsquery('english', ${query}) q
    where search @@ q ${kind ? sql`and kind = ${kind}` : sql``}
    order by rank desc, id
    limit ${limit}`;
}
