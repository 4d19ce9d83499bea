/** @jsxImportSource hono/jsx */
import {
  APPROVAL_ID,
  ApprovalDecisionError,
  approvalDeliveries,
  approvalEvents,
  argumentsHash,
  decideApproval,
  getApproval,
} from '@bulkhead/core/operator';
import type { Hono } from 'hono';
import type { ConsoleContext, ConsoleEnv, ConsoleRequest } from '../../context.ts';
import { field } from '../../form-field.ts';
import { page } from '../../layout/layout.tsx';
import { MessagePage } from '../../layout/message-page.tsx';
import { countPending } from '../../sessions.ts';
import { argumentRows } from '../../visible-text.tsx';
import { DetailPage } from './page.tsx';

/** The approval's page, with a refused decision's error and reason when there is one. */
async function detail(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  id: string,
  extra: { error?: string; reason?: string; decided?: boolean } = {},
  status = 200,
) {
  const { sql } = ctx;
  const approval = APPROVAL_ID.test(id) ? await getApproval(sql, id) : undefined;
  if (!approval)
    return page(
      c,
      <MessagePage title="Not found" message={`There is no approval ${id}.`} approver={c.var.approver} />,
      404,
    );
  const [events, deliveries, pending, votes] = await Promise.all([
    approvalEvents(sql, id),
    approvalDeliveries(sql, id),
    countPending(sql),
    sql<{ decidedBy: string; votedAt: Date }[]>`
      select decided_by as "decidedBy", voted_at as "votedAt" from bulkhead_approval_votes_of(${id})`,
  ]);
  return page(
    c,
    <DetailPage
      approver={c.var.approver}
      pending={pending}
      approval={approval}
      rows={argumentRows(approval.arguments, approval.argumentsRedacted)}
      shownHash={argumentsHash(approval.arguments)}
      valueRows={
        approval.approvedValues ? argumentRows(approval.approvedValues, approval.approvedValues) : []
      }
      events={events}
      deliveries={deliveries}
      votes={votes}
      {...extra}
    />,
    status,
  );
}

/** `POST /approvals/:id/decide`: records Approve or Reject for exactly the arguments the page showed. */
async function decide(c: ConsoleRequest, ctx: ConsoleContext) {
  const id = c.req.param('id')!;
  const form = await c.req.parseBody();
  const decision = field(form, 'decision');
  const reason = field(form, 'reason') ?? '';
  if (decision !== 'approve' && decision !== 'reject')
    return detail(c, ctx, id, { error: 'Choose Approve or Reject.', reason }, 400);
  const approver = c.var.approver;
  // The hash of the arguments the page showed: without it, arguments changed after the page was
  // drawn would be approved as changed.
  const hash = field(form, 'hash');
  if (!hash || !/^[0-9a-f]{64}$/.test(hash))
    return detail(
      c,
      ctx,
      id,
      {
        error:
          'The form did not say which arguments you were shown. Reload the page, review it and decide again.',
        reason,
      },
      400,
    );
  try {
    await decideApproval(ctx.sql, ctx.audit, {
      id,
      decision,
      reason,
      via: 'console',
      proof: approver.proof,
      expectedHash: hash,
      // The decision's event is one of this request's: it carries the request's id.
      requestId: c.get('audit').requestId,
    });
  } catch (err) {
    if (!(err instanceof ApprovalDecisionError)) throw err;
    const status = {
      unknown: 404,
      invalid: 400,
      reason_required: 400,
      decided: 409,
      expired: 409,
      withdrawn: 409,
      changed: 409,
      self_approval: 403,
      unauthorized: 401,
      forbidden: 403,
    }[err.code];
    const sentence = err.message.charAt(0).toUpperCase() + err.message.slice(1);
    return detail(c, ctx, id, { error: `${sentence}.`, reason }, status);
  }
  ctx.logger.info({ approvalId: id, decision, by: approver.label }, 'decision recorded');
  return c.redirect(`/approvals/${id}?decided=1`, 303);
}

/** One approval's page and its decision form's answer. */
export function mountApprovals(app: Hono<ConsoleEnv>, ctx: ConsoleContext): void {
  app.get('/approvals/:id', (c) =>
    detail(c, ctx, c.req.param('id'), { decided: c.req.query('decided') === '1' }),
  );
  app.post('/approvals/:id/decide', (c) => decide(c, ctx));
}
