/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { Layout, page } from '../pages.tsx';

/** Charts (operators only). */
export function mountCharts(app: Hono<ConsoleEnv>, _ctx: ConsoleContext) {
  app.get('/operator/charts', (c) =>
    page(
      c,
      <Layout title="Charts" approver={c.get('approver')} current="charts">
        <h1>Charts</h1>
      </Layout>,
    ),
  );
}
