// The customer server of `pnpm bench` with its audit writer replaced by one that records nothing:
// everything else is the real server (token check, rate limit, transaction, row policies, shaping),
// so that the run measures what the audit path costs. Started as its own process by run.ts.
import { serve } from '@hono/node-server';
import type { AuditWriter } from '@bulkhead/audit';
import { createHttpApp, createLogger, POOL_MAX, READ_POOL_MAX } from '@bulkhead/core';
import { createSql } from '@bulkhead/db';
import { customerServer } from '../../servers/customer/src/server.ts';

// A process of its own, started by run.ts with these two values.
const { BENCH_DATABASE_URL: url, BENCH_PORT: port } = process.env;
if (!url || !port) throw new Error('BENCH_DATABASE_URL and BENCH_PORT are required');

const nothing: AuditWriter = {
  append: async (input) => ({ ...input, id: '' }) as never,
  appendIn: async (_tx, input) => ({ ...input, id: '' }) as never,
  keep: async () => {},
  check: async () => {},
  flush: async () => {},
  held: { waiting: 0, dropped: 0 },
};
// Pools as runServer sizes them.
const http = createHttpApp(customerServer, {
  sql: createSql(url, { max: POOL_MAX, applicationName: 'bench-customer-no-audit' }),
  reads: createSql(url, { max: READ_POOL_MAX, applicationName: 'bench-customer-no-audit', readOnly: true }),
  logger: createLogger({ level: 'warn', name: 'customer' }),
  publicUrl: `http://127.0.0.1:${port}`,
  rateLimitPerMinute: 100_000_000,
  audit: nothing,
});
serve({ fetch: http.app.fetch, port: Number(port), hostname: '127.0.0.1' });
process.on('SIGTERM', () => process.exit(0));
