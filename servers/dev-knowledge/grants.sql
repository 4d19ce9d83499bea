-- What the dev-knowledge server may do in the database, beyond the kit's grants (audit append, token
-- check): read the knowledge base. Nothing of business data, approvals, outbox or sessions.
-- Applied by `bulkhead db roles`; idempotent.
grant select on kb_documents to bulkhead_dev_knowledge;
