/** @jsxImportSource hono/jsx */
import type { MiddlewareHandler } from 'hono';
import type { ConsoleContext, ConsoleEnv } from '../context.ts';
import { page } from '../layout/layout.tsx';
import { MessagePage } from '../layout/message-page.tsx';
import { auditOperator } from '../operator/audit.ts';

/**
 * Lets through only an approver with the operator right (scope tokens:manage, checked again by the
 * database in every operator function). Everyone else gets 403 on every operator page and action, and
 * the refusal is audited with the person.
 */
export function requireOperator(ctx: ConsoleContext): MiddlewareHandler<ConsoleEnv> {
  return async (c, next) => {
    const approver = c.get('approver');
    if (approver.operator) return next();
    await auditOperator(c, ctx, {
      action: 'page',
      outcome: 'forbidden',
      started: performance.now(),
      arguments: { method: c.req.method },
      summary: { reason: 'not_an_operator' },
    });
    ctx.logger.info({ path: c.req.path, token: approver.tokenId }, 'operator page refused: not an operator');
    return page(
      c,
      <MessagePage
        title="Operators only"
        message="This page is for operators. Your approver token does not carry the operator right; ask an operator for one issued with bulkhead approvers add --can-manage-tokens."
        approver={approver}
      />,
      403,
    );
  };
}
