/** @jsxImportSource hono/jsx */
import type { Outcome } from '@bulkhead/audit';
import type { ConsoleContext, ConsoleRequest } from '../context.ts';
import { page } from '../layout/layout.tsx';
import { MessagePage } from '../layout/message-page.tsx';
import { auditOperator } from './audit.ts';

/** What an operator action came to: its audit outcome and summary, and the answer. */
export interface ActionResult {
  outcome: Outcome;
  summary: Record<string, unknown>;
  response: Response | Promise<Response>;
}

/** The database refused: the token lacks the operator right (lost since the session was checked). */
function refusedByDatabase(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '42501';
}

/** The 403 page of an operator request the database refused, audited as the middleware's refusals are. */
async function databaseRefusal(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  action: string,
  started: number,
  args: Record<string, unknown>,
) {
  await auditOperator(c, ctx, {
    action,
    outcome: 'forbidden',
    started,
    arguments: args,
    summary: { reason: 'not_an_operator' },
  });
  return page(
    c,
    <MessagePage
      title="Operators only"
      message="The database refused: your approver token no longer carries the operator right, or it was revoked."
      approver={c.var.approver}
    />,
    403,
  );
}

/**
 * Runs one operator action and writes its audit event (`auditOperator`) whatever it comes to: its own
 * outcome, `forbidden` when the database refuses the operator, `internal_error` (and the error
 * rethrown) when it fails.
 */
export async function operatorAction(
  c: ConsoleRequest,
  ctx: ConsoleContext,
  action: string,
  args: Record<string, unknown>,
  run: () => Promise<ActionResult>,
): Promise<Response> {
  const started = performance.now();
  let result: ActionResult;
  try {
    result = await run();
  } catch (err) {
    if (refusedByDatabase(err)) return databaseRefusal(c, ctx, action, started, args);
    await auditOperator(c, ctx, {
      action,
      outcome: 'internal_error',
      started,
      arguments: args,
      summary: { reason: 'error' },
    });
    throw err;
  }
  await auditOperator(c, ctx, {
    action,
    outcome: result.outcome,
    started,
    arguments: args,
    summary: result.summary,
  });
  return result.response;
}

/** Runs a page's database reads; a refusal by the database is audited (action `page`) and answered 403. */
export async function operatorPage(c: ConsoleRequest, ctx: ConsoleContext, render: () => Promise<Response>) {
  const started = performance.now();
  try {
    return await render();
  } catch (err) {
    if (refusedByDatabase(err)) return databaseRefusal(c, ctx, 'page', started, { method: c.req.method });
    throw err;
  }
}
