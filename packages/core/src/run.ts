import { serve } from '@hono/node-server';
import { migrate, openDatabase } from '@bulkhead/db';
import type { ServerEnv } from './config.ts';
import { startApprovalExecutor } from './approvals/executor.ts';
import { hasGatedTools, type ServerDefinition } from './create-server.ts';
import { createHttpApp } from './http-app.ts';
import { createLogger } from './logger.ts';
import { serveStdio, StartupError } from './stdio.ts';

/** How a server process was started. */
export interface RunOptions {
  env: ServerEnv;
  /** `--stdio`: serve on stdin/stdout instead of HTTP. */
  stdio: boolean;
}

/**
 * Everything a server's `main.ts` does: open the database (the embedded
 * default when `DATABASE_URL` is unset), migrate, serve over HTTP or stdio,
 * run approved actions when a tool is gated, and shut down cleanly on
 * SIGINT/SIGTERM.
 */
export async function runServer(def: ServerDefinition, { env, stdio }: RunOptions): Promise<void> {
  const logger = createLogger({ level: env.LOG_LEVEL, name: def.name, stderr: stdio });
  const db = await openDatabase({
    ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}),
    dataDir: env.BULKHEAD_DATA_DIR,
    applicationName: `bulkhead-${def.name}`,
    log: (line) => logger.info(line),
  });
  if (env.BULKHEAD_MIGRATE) {
    const { applied } = await migrate(db.sql);
    if (applied.length) logger.info({ applied }, 'migrations applied');
  }
  const closers: (() => Promise<unknown>)[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const close of closers.reverse())
      await close().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
    await db.close();
    logger.flush?.();
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));

  const approvalUrls = {
    approvalWebhookUrl: env.BULKHEAD_APPROVAL_WEBHOOK_URL,
    consoleUrl: env.BULKHEAD_CONSOLE_URL,
  };
  const startExecutor = () => {
    // Every process serving a gated server runs approved actions; replicas share the work safely.
    if (!hasGatedTools(def)) return;
    const executor = startApprovalExecutor(def, {
      sql: db.sql,
      logger,
      webhookUrl: env.BULKHEAD_APPROVAL_WEBHOOK_URL,
    });
    closers.push(() => executor.stop());
  };

  if (stdio) {
    try {
      const handle = await serveStdio(def, {
        sql: db.sql,
        logger,
        token: env.BULKHEAD_TOKEN,
        auditFullResults: env.BULKHEAD_AUDIT_FULL_RESULTS,
        ...approvalUrls,
      });
      closers.push(() => handle.close());
      startExecutor();
      process.stdin.once('end', () => void stop(0));
      logger.info('serving over stdio');
    } catch (err) {
      if (err instanceof StartupError) {
        process.stderr.write(`${def.name}: ${err.message}\n`);
        await stop(1);
      }
      throw err;
    }
    return;
  }

  const http = createHttpApp(def, {
    sql: db.sql,
    logger,
    publicUrl: env.BULKHEAD_PUBLIC_URL,
    maxBodyBytes: env.BULKHEAD_MAX_BODY_BYTES,
    rateLimitPerMinute: env.BULKHEAD_RATE_LIMIT_PER_MINUTE,
    auditFullResults: env.BULKHEAD_AUDIT_FULL_RESULTS,
    ...approvalUrls,
    ...(env.BULKHEAD_ALLOWED_ORIGINS ? { allowedOrigins: env.BULKHEAD_ALLOWED_ORIGINS } : {}),
    ...(env.BULKHEAD_ALLOWED_HOSTS ? { allowedHosts: env.BULKHEAD_ALLOWED_HOSTS } : {}),
  });
  const server = serve({ fetch: http.app.fetch, port: env.PORT, hostname: env.HOST });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  closers.push(
    () => new Promise((resolve) => server.close(resolve)),
    () => http.close(),
  );
  startExecutor();
  logger.info({ url: `${env.BULKHEAD_PUBLIC_URL}/mcp` }, `${def.name} listening`);
}
