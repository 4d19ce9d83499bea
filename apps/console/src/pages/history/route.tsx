/** @jsxImportSource hono/jsx */
import {
  APPROVAL_STATUSES,
  approvalFacets,
  listApprovals,
  type ApprovalStatus,
} from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { countPending } from '../../sessions.ts';
import { HistoryPage } from './page.tsx';

/** `GET /history`: every request with its outcome, filtered by status, server and tool. */
export function mountHistory(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  const { sql } = ctx;
  app.get('/history', async (c) => {
    const q = c.req.query();
    const status = (APPROVAL_STATUSES as readonly string[]).includes(q.status ?? '')
      ? (q.status as ApprovalStatus)
      : undefined;
    const server = q.server && q.server.length <= 100 ? q.server : undefined;
    const tool = q.tool && q.tool.length <= 100 ? q.tool : undefined;
    const [{ approvals, truncated }, facets, pending] = await Promise.all([
      listApprovals(sql, {
        limit: 100,
        ...(status ? { status } : {}),
        ...(server ? { server } : {}),
        ...(tool ? { tool } : {}),
      }),
      approvalFacets(sql),
      countPending(sql),
    ]);
    return page(
      c,
      <HistoryPage
        approver={c.var.approver}
        pending={pending}
        approvals={approvals}
        truncated={truncated}
        filter={{ status, server, tool }}
        servers={facets.servers}
        tools={facets.tools}
      />,
    );
  });
}
