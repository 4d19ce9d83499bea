import { randomUUID } from 'node:crypto';
import type { Outcome } from '@bulkhead/audit';
import type { ConsoleContext, ConsoleRequest } from '../context.ts';
import { sourceAddress } from '../source.ts';

/**
 * Writes an operator action's audit event: server `console`, method `console/operator`, the action as the
 * tool (`revoke_person`, `issue_token`, `switch_tool`, `audit_export`, `page`…), under the operator's
 * approver token, with the person (the token's owner) and the source address among the arguments.
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
  return ctx.audit.append({
    server: 'console',
    method: 'console/operator',
    tool: o.action,
    outcome: o.outcome,
    requestId: randomUUID(),
    durationMs: performance.now() - o.started,
    tokenId: approver.tokenId,
    tokenLabel: approver.label,
    clientName: c.req.header('user-agent')?.slice(0, 200) ?? null,
    arguments: {
      person: approver.owner,
      source: sourceAddress(c, ctx.proxyHops),
      path: c.req.path,
      ...o.arguments,
    },
    resultSummary: o.summary ?? null,
  });
}
