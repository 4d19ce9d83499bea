import type { Sql } from '@bulkhead/core';
import { DOC_KINDS, type DocKind } from '@bulkhead/domain';

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

/** A whole document. */
export interface Doc extends DocSummary {
  body: string;
}

/** How a search matches: every word (`websearch_to_tsquery`), or any of them. */
function tsquery(sql: Sql, query: string, anyWord: boolean) {
  return anyWord
    ? sql`to_tsquery('simple', coalesce((
        select string_agg(quote_literal(lexeme), ' | ')
        from unnest(tsvector_to_array(to_tsvector('english', ${query}))) lexeme), ''))`
    : sql`websearch_to_tsquery('english', ${query})`;
}

/**
 * Ranked full-text search, without snippets. `websearch_to_tsquery` accepts
 * quotes, "or" and "-word" and never fails on user text; it requires every
 * word. With `anyWord` any of the words will do, so that a question in natural
 * language still finds something when no document has every word. Titles
 * weigh five times as much as bodies, and the rank is normalised by document
 * length (flag 1) so that a long document does not win on size alone. Served
 * by the GIN index on `search`: milliseconds, however large the documents.
 */
export async function rankDocuments(
  sql: Sql,
  {
    query,
    kind,
    limit,
    anyWord = false,
  }: { query: string; kind: DocKind | undefined; limit: number; anyWord?: boolean },
): Promise<(DocSummary & { rank: number })[]> {
  return sql<(DocSummary & { rank: number })[]>`
    select id, title, kind, tags, to_char(updated_on, 'YYYY-MM-DD') as "updatedOn",
      ts_rank('{0.05, 0.1, 0.2, 1.0}', search, q, 1)::float8 as rank
    from kb_documents, ${tsquery(sql, query, anyWord)} q
    where search @@ q ${kind ? sql`and kind = ${kind}` : sql``}
    order by rank desc, id
    limit ${limit}`;
}

/**
 * The snippets of `ids` for the same search: up to two fragments around the
 * matches, matches in `**`. The costly part of a search: `ts_headline` reads
 * and parses each document's whole body (the index cannot help), some 50 ms
 * for a 300 kB API reference.
 */
export async function snippets(
  sql: Sql,
  { ids, query, anyWord = false }: { ids: string[]; query: string; anyWord?: boolean },
): Promise<Map<string, string>> {
  const rows = await sql<{ id: string; snippet: string }[]>`
    select d.id, ts_headline('english', d.body, q,
      'MaxWords=30, MinWords=12, MaxFragments=2, FragmentDelimiter=" … ", StartSel="**", StopSel="**"') as snippet
    from kb_documents d, ${tsquery(sql, query, anyWord)} q
    where d.id = any(${ids})`;
  return new Map(rows.map((r) => [r.id, r.snippet]));
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
