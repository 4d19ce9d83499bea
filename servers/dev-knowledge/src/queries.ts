import { DOC_KINDS, type DocKind, type Sql } from '@bulkhead/db';

export { DOC_KINDS, type DocKind };

/** A document without its body. */
export interface DocSummary {
  id: string;
  title: string;
  kind: DocKind;
  tags: string[];
  /** `YYYY-MM-DD`, or null for a document stored without a date. */
  updatedOn: string | null;
}

/** One search hit. */
export interface DocHit extends DocSummary {
  rank: number;
  snippet: string;
}

/** A whole document. */
export interface Doc extends DocSummary {
  body: string;
}

/**
 * Ranked full-text search. `websearch_to_tsquery` accepts quotes, "or" and
 * "-word" and never fails on user text; it requires every word. When no
 * document has every word, the search is repeated with any of the words
 * (`anyWord`), so that a question in natural language still finds something.
 * Titles weigh five times as much as bodies, and the rank is normalised by
 * document length (flag 1) so that a long document does not win on size
 * alone. The snippet is computed for the returned rows only (it reads the body).
 */
export async function searchDocuments(
  sql: Sql,
  {
    query,
    kind,
    limit,
    anyWord = false,
  }: { query: string; kind: DocKind | undefined; limit: number; anyWord?: boolean },
): Promise<DocHit[]> {
  const tsquery = anyWord
    ? sql`to_tsquery('simple', coalesce((
        select string_agg(quote_literal(lexeme), ' | ')
        from unnest(tsvector_to_array(to_tsvector('english', ${query}))) lexeme), ''))`
    : sql`websearch_to_tsquery('english', ${query})`;
  return sql<DocHit[]>`
    select d.id, d.title, d.kind, d.tags, to_char(d.updated_on, 'YYYY-MM-DD') as "updatedOn", hit.rank,
      ts_headline('english', d.body, hit.q,
        'MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … ", StartSel=«, StopSel=»') as snippet
    from (
      select id, q, ts_rank('{0.05, 0.1, 0.2, 1.0}', search, q, 1)::float8 as rank
      from kb_documents, ${tsquery} q
      where search @@ q ${kind ? sql`and kind = ${kind}` : sql``}
      order by rank desc, id
      limit ${limit}
    ) hit
    join kb_documents d using (id)
    order by hit.rank desc, d.id`;
}

/** One document by id, with its body; undefined when there is none. */
export async function getDocument(sql: Sql, id: string): Promise<Doc | undefined> {
  const [doc] = await sql<Doc[]>`
    select id, title, kind, tags, to_char(updated_on, 'YYYY-MM-DD') as "updatedOn", body
    from kb_documents where id = ${id}`;
  return doc;
}

/** A page of documents by id, optionally of one kind and carrying one tag, with the number matching. */
export async function listDocuments(
  sql: Sql,
  {
    kind,
    tag,
    limit,
    offset,
  }: { kind: DocKind | undefined; tag: string | undefined; limit: number; offset: number },
): Promise<{ total: number; rows: DocSummary[] }> {
  const where = sql`where true ${kind ? sql`and kind = ${kind}` : sql``} ${tag ? sql`and ${tag} = any(tags)` : sql``}`;
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from kb_documents ${where}`;
  const rows = await sql<DocSummary[]>`
    select id, title, kind, tags, to_char(updated_on, 'YYYY-MM-DD') as "updatedOn"
    from kb_documents ${where}
    order by id
    limit ${limit} offset ${offset}`;
  return { total: count!.n, rows };
}

/** Every tag in use with how many documents carry it, most used first. */
export async function tagsInUse(sql: Sql): Promise<{ tag: string; n: number }[]> {
  return sql<{ tag: string; n: number }[]>`
    select tag, count(*)::int as n from kb_documents, unnest(tags) tag
    group by tag order by n desc, tag`;
}
