import type { Sql } from '@bulkhead/db';

/** The kinds of engineering document, as the `kb_documents.kind` check allows them. */
export const DOC_KINDS = ['adr', 'runbook', 'guide', 'api'] as const;
export type DocKind = (typeof DOC_KINDS)[number];

/** A document id: its file name without `.md`, kebab-case (`adr-0003-one-server-per-trust-zone`). */
export const DOC_ID_PATTERN = /^[a-z0-9][a-z0-9-]{2,100}$/;

/** A tag in a document's front matter (`tokens`, `incident-response`). */
export const DOC_TAG_PATTERN = /^[a-z0-9][a-z0-9-]{0,39}$/;

/** One document as ingest writes it. */
export interface KbDocumentInput {
  id: string;
  title: string;
  kind: DocKind;
  tags: string[];
  body: string;
  sourcePath: string;
  contentHash: string;
  /** `YYYY-MM-DD`. */
  updatedOn: string;
}

/** What ingest needs to know about a stored document to decide whether to touch it. */
export interface KbDocumentState {
  id: string;
  contentHash: string;
  sourcePath: string | null;
}

/** The id, hash and origin of every stored document. */
export async function listDocumentStates(sql: Sql): Promise<KbDocumentState[]> {
  return sql<KbDocumentState[]>`
    select id, content_hash as "contentHash", source_path as "sourcePath" from kb_documents order by id`;
}

/** Inserts a document or replaces the one with the same id. */
export async function upsertDocument(sql: Sql, doc: KbDocumentInput): Promise<void> {
  await sql`
    insert into kb_documents (id, title, kind, tags, body, source_path, content_hash, updated_on, ingested_at)
    values (${doc.id}, ${doc.title}, ${doc.kind}, ${doc.tags}, ${doc.body}, ${doc.sourcePath},
      ${doc.contentHash}, ${doc.updatedOn}, now())
    on conflict (id) do update set
      title = excluded.title, kind = excluded.kind, tags = excluded.tags, body = excluded.body,
      source_path = excluded.source_path, content_hash = excluded.content_hash,
      updated_on = excluded.updated_on, ingested_at = excluded.ingested_at`;
}

/** Removes documents by id; returns how many were removed. */
export async function deleteDocuments(sql: Sql, ids: string[]): Promise<number> {
  if (!ids.length) return 0;
  const result = await sql`delete from kb_documents where id = any(${ids})`;
  return result.count;
}

/** How many documents are stored. */
export async function countDocuments(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from kb_documents`;
  return row!.n;
}

const INGEST_LOCK_KEY = 0x6b62_696e; // "kbin": two ingests at once take turns instead of racing on the same ids

/** Serialises ingests for the rest of the transaction `sql` belongs to. */
export async function lockKnowledgeIngest(sql: Sql): Promise<void> {
  await sql`select pg_advisory_xact_lock(${INGEST_LOCK_KEY})`;
}
