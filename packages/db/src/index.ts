export { createSql, isReachable, type Sql, type SqlOptions } from './connect.ts';
export { ensureEmbedded, embeddedUrlFile, type EmbeddedDatabase, type EmbeddedOptions } from './embedded.ts';
export { migrate, loadMigrations, migrationsDir, type Migration, type MigrateResult } from './migrate.ts';
export { openDatabase, type Database, type OpenDatabaseOptions } from './open.ts';
export { createTestDatabase, type TestDatabase } from './test-database.ts';
export {
  seedDemo,
  generateDemoData,
  DEMO_SEED,
  DEMO_REFERENCE_DATE,
  DEMO_INJECTION_TICKETS,
  type DemoCounts,
  type DemoData,
  type SeedDemoOptions,
  type SeedDemoResult,
} from './demo/index.ts';
export {
  DOC_ID_PATTERN,
  DOC_KINDS,
  DOC_TAG_PATTERN,
  countDocuments,
  deleteDocuments,
  listDocumentStates,
  lockKnowledgeIngest,
  upsertDocument,
  type DocKind,
  type KbDocumentInput,
  type KbDocumentState,
} from './knowledge/documents.ts';
export {
  getTicketMessages,
  TICKET_AUTHOR_KINDS,
  TICKET_CATEGORIES,
  TICKET_STATUSES,
  type TicketAuthorKind,
  type TicketCategory,
  type TicketMessage,
  type TicketStatus,
} from './helpdesk.ts';
