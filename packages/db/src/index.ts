// The production entry: it loads no embedded database (that is `@bulkhead/db/embedded`, for development).
export { createSql, isConnectionError, isReachable, type Sql, type SqlOptions } from './connect.ts';
export {
  migrate,
  loadMigrations,
  mayMigrate,
  migrationsDir,
  missingMigrations,
  type Migration,
  type MigrateResult,
} from './migrate.ts';
export { openDatabase, type Database, type OpenDatabaseOptions } from './open.ts';
export {
  applyPrivileges,
  connectedAsOwner,
  DEFAULT_CONNECTION_LIMIT,
  FOREIGN_DATABASE_REFUSAL,
  FOREIGN_DATABASES,
  sessionHazards,
  unpinnedFunctions,
  ensureGroupRoles,
  ensureLogin,
  groupRole,
  loginRole,
  roleSpecs,
  SEALER,
  type RoleSpec,
} from './roles.ts';
export { setAllowSelfApproval } from './settings.ts';
export { ensureOwner, isSuperuser, OWNER_ROLE, schemaOwner, type OwnerReport } from './owner.ts';
