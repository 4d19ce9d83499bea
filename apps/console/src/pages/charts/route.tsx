/** @jsxImportSource hono/jsx */
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { chartData } from './data.ts';
import { ChartsPage } from './page.tsx';
import { parseRange } from './range.ts';

/** `GET /operator/charts`: the operators' charts over the range the form asks for (the last day by default). */
export function mountCharts(app: Hono<ConsoleEnv>, ctx: ConsoleContext) {
  app.get('/operator/charts', async (c) => {
    const approver = c.get('approver');
    const now = new Date();
    const asked = parseRange(c.req.query(), now);
    if ('error' in asked)
      return page(c, <ChartsPage approver={approver} fields={asked.fields} error={asked.error} />, 400);
    const data = await chartData(ctx.sql, approver.proof, asked.range);
    return page(
      c,
      <ChartsPage approver={approver} fields={asked.fields} shown={{ range: asked.range, data, now }} />,
    );
  });
}
