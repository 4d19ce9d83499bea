import { serve } from '@hono/node-server';
import { ConfigError, createLogger } from '@bulkhead/core';
import { migrate, openDatabase } from '@bulkhead/db';
import { createConsoleApp } from './app.tsx';
import { loadEnv } from './env.ts';

try {
  const env = loadEnv();
  const logger = createLogger({ level: env.LOG_LEVEL, name: 'console' });
  const db = await openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: 'bulkhead-console',
    log: (line) => logger.info(line),
  });
  if (env.BULKHEAD_MIGRATE) {
    const { applied } = await migrate(db.sql);
    if (applied.length) logger.info({ applied }, 'migrations applied');
  }
  const consoleApp = createConsoleApp({
    sql: db.sql,
    logger,
    publicUrl: env.BULKHEAD_PUBLIC_URL,
    sessionHours: env.BULKHEAD_SESSION_HOURS,
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
  process.stderr.write(`console: ${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}
