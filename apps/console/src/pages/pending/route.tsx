/** @jsxImportSource hono/jsx */
import { listApprovals } from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../../context.ts';
import { page } from '../../layout/layout.tsx';
import { argumentFindings, argumentRows, findings, mergeFindings } from '../../visible-text.tsx';
import { PendingPage } from './page.tsx';

/** `GET /`: every request waiting for a decision, oldest first. */
export function mountPending(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.get('/', async (c) => {
    const { approvals, truncated } = await listApprovals(ctx.sql, {
      status: 'pending',
      limit: 100,
      order: 'oldest',
    });
    const cards = approvals.map((approval) => {
      const rows = argumentRows(approval.arguments, approval.argumentsRedacted);
      return {
        approval,
        rows,
        findings: mergeFindings([findings(approval.preview), argumentFindings(rows)]),
      };
    });
    return page(c, <PendingPage approver={c.var.approver} approvals={cards} truncated={truncated} />);
  });
}
