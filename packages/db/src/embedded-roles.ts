import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSql } from './connect.ts';
import { migrate } from './migrate.ts';
import { applyPrivileges, ensureGroupRoles, ensureLogin, loginRole, type RoleSpec } from './roles.ts';

/** Where the embedded default keeps a deployable's login password (generated once, mode 0600). */
export function rolePasswordFile(dataDir: string, deployable: string): string {
  return join(dataDir, 'roles', `${deployable}.password`);
}

async function rolePassword(dataDir: string, deployable: string): Promise<string> {
  const file = rolePasswordFile(dataDir, deployable);
  if (!existsSync(file)) {
    await mkdir(join(dataDir, 'roles'), { recursive: true, mode: 0o700 });
    await writeFile(file, randomBytes(24).toString('base64url'), { mode: 0o600, flag: 'wx' }).catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      },
    );
  }
  return (await readFile(file, 'utf8')).trim();
}

/**
 * On the embedded default, as its superuser: applies the migrations (which run as the schema's owner
 * role), creates every deployable's group role with its grants, and a login role per deployable in
 * `deployables` with a generated password kept in the data dir and the default connection limit.
 * Returns each deployable's connection URL, so that every server runs under its own role there too,
 * exactly as in production.
 */
export async function prepareEmbeddedRoles(
  adminUrl: string,
  dataDir: string,
  specs: readonly RoleSpec[],
  deployables: readonly string[],
): Promise<Record<string, string>> {
  const admin = createSql(adminUrl, { max: 1 });
  try {
    await migrate(admin);
    await ensureGroupRoles(admin, specs);
    await applyPrivileges(admin, specs);
    const urls: Record<string, string> = {};
    for (const name of deployables) {
      const password = await rolePassword(dataDir, name);
      await ensureLogin(admin, name, loginRole(name), password);
      const url = new URL(adminUrl);
      url.username = loginRole(name);
      url.password = password;
      urls[name] = url.toString();
    }
    return urls;
  } finally {
    await admin.end({ timeout: 5 });
  }
}
