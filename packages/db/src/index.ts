export { createSql, isReachable, type Sql, type SqlOptions } from './connect.ts';
export { ensureEmbedded, embeddedUrlFile, type EmbeddedDatabase, type EmbeddedOptions } from './embedded.ts';
export { migrate, loadMigrations, migrationsDir, type Migration, type MigrateResult } from './migrate.ts';
export { openDatabase, type Database, type OpenDatabaseOptions } from './open.ts';
export { createTestDatabase, type TestDatabase } from './test-database.ts';
