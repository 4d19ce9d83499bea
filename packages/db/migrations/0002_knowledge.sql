-- Engineering knowledge: ADRs, runbooks, guides and API references, searched with full-text search.
create table kb_documents (
  id text primary key,
  title text not null,
  kind text not null check (kind in ('adr', 'runbook', 'guide', 'api')),
  tags text[] not null default '{}',
  body text not null,
  source_path text,
  content_hash text not null,
  updated_on date,
  ingested_at timestamptz not null default now(),
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') ||
    setweight(to_tsvector('english', body), 'B')
  ) stored
);

create index kb_documents_search on kb_documents using gin (search);
create index kb_documents_kind on kb_documents (kind);
create index kb_documents_tags on kb_documents using gin (tags);
