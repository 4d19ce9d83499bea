import { metricsRoute, type Metrics } from '@bulkhead/core/operator';
import { isReachable } from '@bulkhead/db';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from './context.ts';
import { sourceAddress } from './source.ts';

/** `/healthz`, `/metrics` and `/readyz`: what orchestrators and scrapers ask, with no approver. */
export function mountProbes(
  app: Hono<ConsoleEnv>,
  ctx: ConsoleContext,
  metrics: Metrics,
  metricsToken: string | undefined,
): void {
  app.get('/healthz', (c) => c.json({ status: 'ok', server: 'console' }));
  // The client's address, not a proxy's: behind a proxy on the same host every request is loopback.
  app.get(
    '/metrics',
    metricsRoute(metrics, metricsToken, (c) => sourceAddress(c, ctx.proxyHops)),
  );
  app.get('/readyz', async (c) =>
    (await isReachable(ctx.sql, 2000))
      ? c.json({ status: 'ready', server: 'console' })
      : c.json({ status: 'unavailable', server: 'console', reason: 'database unreachable' }, 503),
  );
}
