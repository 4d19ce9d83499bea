import { lstat, mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { roleSpecs } from '@bulkhead/db';
import { ensureEmbedded, type EmbeddedDatabase } from '@bulkhead/db/embedded';
import { discoverDeployables } from '@bulkhead/deployables';
import { ensureBundle } from '@bulkhead/cli/bundle';

/**
 * Gives every test file a Postgres server to create its own databases on:
 * the one in `DATABASE_URL` when set (CI's real PostgreSQL), otherwise the
 * embedded default, started in a temporary data dir and stopped afterwards.
 */
export default async function setup(): Promise<() => Promise<void>> {
  // The CLI's bundle, built once here when a source changed, so that no test's run of `bulkhead` builds it.
  await ensureBundle({ quiet: true });
  // The deployables whose roles every test database sets up (createTestDatabase), found here once: the
  // database layer's test helper takes them as handed over and knows no repository.
  process.env.BULKHEAD_TEST_ROLES = JSON.stringify(
    roleSpecs(discoverDeployables(fileURLToPath(new URL('..', import.meta.url)))),
  );
  // The test harness is a deployable of its own; this is its one environment read.
  const external = process.env.DATABASE_URL;
  if (external) {
    process.env.BULKHEAD_TEST_ADMIN_URL = external;
    process.env.BULKHEAD_TEST_DB = 'external';
    return async () => {};
  }
  const dir = await mkdtemp(join(tmpdir(), 'bulkhead-test-'));
  const db: EmbeddedDatabase = await ensureEmbedded({ dataDir: dir });
  const admin = new URL(db.adminUrl);
  admin.pathname = '/postgres';
  process.env.BULKHEAD_TEST_ADMIN_URL = admin.toString();
  process.env.BULKHEAD_TEST_DB = 'embedded';
  return async () => {
    await db.stop();
    // As root with a temp dir the postgres user cannot enter, the cluster lives elsewhere, linked as pg.
    const pg = join(dir, 'pg');
    if ((await lstat(pg).catch(() => undefined))?.isSymbolicLink())
      await rm(await readlink(pg), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  };
}
