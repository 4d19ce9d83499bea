import { serve } from '@hono/node-server';
import {
  ConfigError,
  connectFailure,
  createLogger,
  openOwnDatabase,
  ownGrants,
  prepareDatabase,
  StartupError,
  withUrlsShown,
} from '@bulkhead/core';
import { createConsoleApp } from './app.tsx';
import { loadEnv } from './env.ts';
import { oauthServers } from './oauth-servers.ts';

try {
  const env = loadEnv();
  const logger = createLogger({ level: env.LOG_LEVEL, name: 'console' });
  const db = await openOwnDatabase(
    { name: 'console', kind: 'console', grantsSql: ownGrants(import.meta.url) },
    env,
    { logger },
  );
  try {
    await prepareDatabase('console', env, { sql: db.sql, logger });
  } catch (err) {
    await db.close();
    // Its pool (openDatabase's default of 10) and the LISTEN connection of the token cache.
    throw connectFailure(err, db.url, 'console', 11);
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
    oauthServers: oauthServers(env.BULKHEAD_SERVER_URLS),
    oidc: env.oidc,
    tokenSignIn: env.tokenSignIn,
    scimToken: env.scimToken,
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
