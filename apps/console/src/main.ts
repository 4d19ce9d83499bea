import { serve } from '@hono/node-server';
import {
  checkPooler,
  checkRole,
  ConfigError,
  connectFailure,
  createLogger,
  readySchema,
  StartupError,
  withUrlsShown,
  workspaceRoot,
} from '@bulkhead/core';
import { openDatabase, roleSpecs } from '@bulkhead/db';
import { discoverDeployables } from '@bulkhead/deployables';
import { createConsoleApp } from './app.tsx';
import { loadEnv } from './env.ts';

try {
  const env = loadEnv();
  const logger = createLogger({ level: env.LOG_LEVEL, name: 'console' });
  const deployables = discoverDeployables(workspaceRoot());
  const db = await openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: 'bulkhead-console',
    log: (line) => logger.info(line),
    deployable: { name: 'console', roles: roleSpecs(deployables) },
  });
  try {
    // First: behind a pooler that loses sessions, even the migration's lock would not hold.
    await checkPooler(db.sql);
  } catch (err) {
    await db.close();
    // Its pool (openDatabase's default of 10) and the LISTEN connection of the token cache.
    throw connectFailure(err, db.url, 'console', 11);
  }
  try {
    // Migrated only by an allowed owner; under the console's own role, a schema behind stops the start.
    const applied = await readySchema(db.sql, {
      deployable: 'console',
      migrate: env.BULKHEAD_MIGRATE,
      allowOwner: env.BULKHEAD_ALLOW_OWNER_ROLE,
    });
    if (applied.length) logger.info({ applied }, 'migrations applied');
    logger.info(await checkRole(db.sql, 'console', env.BULKHEAD_ALLOW_OWNER_ROLE));
  } catch (err) {
    await db.close();
    throw err;
  }
  const consoleApp = createConsoleApp({
    sql: db.sql,
    logger,
    publicUrl: env.BULKHEAD_PUBLIC_URL,
    sessionHours: env.BULKHEAD_SESSION_HOURS,
    allowSelfApproval: env.BULKHEAD_ALLOW_SELF_APPROVAL,
    metricsToken: env.BULKHEAD_METRICS_TOKEN,
    auditKey: env.BULKHEAD_AUDIT_KEY,
    proxyHops: env.BULKHEAD_PROXY_HOPS,
    oauthServers: deployables
      .filter((d) => d.kind === 'mcp')
      .map((d) => ({
        name: d.name,
        description: d.description.replace(/^Bulkhead MCP server:\s*/, ''),
        resource: `${env.BULKHEAD_SERVER_URLS?.[d.name] ?? `http://127.0.0.1:${d.port}`}/mcp`,
        scopes: d.scopes,
        customerBound: d.customerBound,
      })),
    ...(env.BULKHEAD_ALLOWED_HOSTS ? { allowedHosts: env.BULKHEAD_ALLOWED_HOSTS } : {}),
  });
  const server = serve({ fetch: consoleApp.app.fetch, port: env.PORT, hostname: env.HOST });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await new Promise((resolve) => server.close(resolve));
    await consoleApp.close();
    await db.close();
    logger.flush?.();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  logger.info({ url: env.BULKHEAD_PUBLIC_URL }, 'console listening');
} catch (err) {
  process.stderr.write(
    `console: ${err instanceof ConfigError || err instanceof StartupError ? err.message : withUrlsShown(String(err))}\n`,
  );
  process.exit(1);
}
