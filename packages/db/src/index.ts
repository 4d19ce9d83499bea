export { createSql, isConnectionError, isReachable, type Sql, type SqlOptions } from './connect.ts';
export { ensureEmbedded, embeddedUrlFile, type EmbeddedDatabase, type EmbeddedOptions } from './embedded.ts';
export { EmbeddedStartError } from './embedded-placement.ts';
export { migrate, loadMigrations, migrationsDir, type Migration, type MigrateResult } from './migrate.ts';
export { openDatabase, type Database, type OpenDatabaseOptions } from './open.ts';
export { prepareEmbeddedRoles, rolePasswordFile } from './embedded-roles.ts';
export {
  discoverDeployables,
  readDeployable,
  ManifestError,
  type Deployable,
  type Probe,
} from './deployables.ts';
export {
  applyPrivileges,
  connectedAsOwner,
  DEFAULT_CONNECTION_LIMIT,
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
export { ensureOwner, isSuperuser, OWNER_ROLE, schemaOwner, type OwnerReport } from './owner.ts';
