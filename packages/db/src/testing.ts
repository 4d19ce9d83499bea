// What tests use and production code never does: `@bulkhead/db/testing`.
export { createTestDatabase, type TestDatabase } from './test-database.ts';
