import type { Outcome } from '@bulkhead/audit';
import type { ConsoleContext, ConsoleRequest } from '../context.ts';
import { sourceAddress } from '../source.ts';

/**
 * Writes an operator action's audit event: server `console`, method `console/operator`, the action as the
 * tool (`revoke_person`, `issue_token`, `switch_tool`, `audit_export`, `page`…), under the operator's
 * approver token, with the person (the token's owner) and the source address among the arguments; in the
 * request's own id, which its other events share.
 */
export function auditOperator(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  o: {
    action: string;
    outcome: Outcome;
    started: number;
    arguments?: Record<string, unknown>;
    summary?: Record<string, unknown>;
  },
) {
  const approver = c.get('approver');
  // The request's owner names the approver's token (the approver middleware told it) and the browser.
  return c.get('audit').append({
    method: 'console/operator',
    tool: o.action,
    outcome: o.outcome,
    since: o.started,
    arguments: {
      person: approver.owner,
      source: sourceAddress(c, ctx.proxyHops),
      path: c.req.path,
      ...o.arguments,
    },
    resultSummary: o.summary ?? null,
  });
}
