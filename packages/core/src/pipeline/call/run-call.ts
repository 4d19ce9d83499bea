import type { CallToolResult } from '@modelcontextprotocol/server';
import type { AuditEventInput, Outcome } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { withReadConnection, type TransactionSql } from '../database/guarded-sql.ts';
import { inSpan } from '../observability/tracing.ts';
import type { AnyTool, ToolContext } from '../tool-definition/define-tool.ts';
import { answerFailure } from './answer-failure.ts';
import type { CallKit, CallRequest } from './call-tool.ts';
import { pendingApprovalOutput } from './pending-result.ts';
import { askPolicy, verdictSummary, type CallVerdict } from '../policy/gate.ts';
import { errorResult } from './record-call.ts';
import { NO_PROGRESS } from './progress.ts';
import type { CallRecord } from './record-call.ts';
import { callHandler, runHandler } from './run-handler.ts';
import { DEFAULT_TIMEOUT_MS } from './time-limit.ts';
import { shapeResult, type ShapedResult } from './shape-result.ts';
import { committedInTime, transaction } from './write-transaction.ts';

/** What the handler's run gives back: its shaped result, its outcome, and a filed approval. */
type Shaped<A> = ShapedResult & { approvalId?: string; approval?: A; outcome: Outcome };

/** One call past validation, as its steps share it. */
interface Run<A> {
  kit: CallKit<A>;
  req: CallRequest;
  tool: AnyTool;
  args: unknown;
  rec: CallRecord;
  /** The tool may change something (a gated tool files its request): it runs in a transaction. */
  writes: boolean;
  /** The backend a withdrawn call may cancel, once known (none while it shares a read lane). */
  target: () => number | undefined;
  /** Past this point the transaction's COMMIT is on its way: a lost connection leaves its fate unknown. */
  committing: boolean;
  commitSent: () => void;
}

/** The settings a call's connection runs under: the customer the row policies fence on, and its time limit. */
interface Settings {
  customerId: string | null;
  proof: CallRequest['access']['proof'] | undefined;
  timeoutMs: number;
}

/**
 * The call itself, past validation: the handler (or the approval request) on a connection of its
 * own, in a transaction when the tool may change something, under one time limit that counts the
 * wait for the connection too; then its event, committed with its effects or right after.
 */
export async function runCall<A>(
  kit: CallKit<A>,
  req: CallRequest,
  tool: AnyTool,
  args: { value: unknown },
  rec: CallRecord,
  filed: (approval: A) => void,
): Promise<CallToolResult> {
  const timeoutMs = tool.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  rec.limit.timeoutMs = timeoutMs;
  // One time limit for the whole call: waiting for a connection counts against it too.
  rec.limit.deadline = performance.now() + timeoutMs;
  let commitSent!: () => void;
  const commitBegun = new Promise<void>((resolve) => (commitSent = resolve));
  const run: Run<A> = {
    kit,
    req,
    tool,
    args: args.value,
    rec,
    writes: !tool.annotations.readOnlyHint || Boolean(tool.approval),
    target: () => undefined,
    committing: false,
    commitSent,
  };
  const stop = () => {
    // A withdrawn call's query would run on until its statement timeout: stop it now. Not its COMMIT:
    // cancelled while it waits for a synchronous standby, it would commit on the primary alone.
    const pid = run.target();
    if (pid !== undefined && !run.committing) kit.sql`select pg_cancel_backend(${pid})`.catch(() => {});
  };
  req.signal?.addEventListener('abort', stop, { once: true });
  // The policy set is at hand before the call takes its connection (read at start, and kept current
  // apart from calls): a call never waits for a second connection while it holds one.
  if (kit.policy) await kit.policy.state();
  try {
    // The proof goes only where the database fences on a customer: other calls keep sharing read lanes.
    const proof = req.access.customerId === null ? undefined : req.access.proof;
    const settings: Settings = { customerId: req.access.customerId, proof, timeoutMs };
    const outcome = run.writes
      ? await committedInTime(
          transaction(kit.sql, rec.limit, req.signal, (tx: TransactionSql) => runOn(run, tx, settings)),
          commitBegun,
          rec,
        )
      : await withReadConnection(
          kit.sql,
          kit.reads,
          { onStoppable: (t) => (run.target = t), signal: req.signal, ...settings },
          (conn) => runOn(run, conn),
        );
    // Committed with its event by now: a task made of it exists for tasks/get on every replica.
    if (outcome.shaped.approval !== undefined) filed(outcome.shaped.approval);
    return run.writes ? outcome.shaped.result : rec.release(outcome.done, outcome.shaped.result);
  } catch (err) {
    return answerFailure(err, tool, req, rec, { writes: run.writes, committing: run.committing });
  } finally {
    req.signal?.removeEventListener('abort', stop);
  }
}

/**
 * The call on the connection `q`: a transaction whose settings `open` sends, or a read connection set
 * already. A write call's event goes into its transaction, to commit with its effects or not at all.
 */
async function runOn<A>(
  run: Run<A>,
  q: TransactionSql | Sql,
  open?: Settings,
): Promise<{ shaped: Shaped<A>; done: AuditEventInput }> {
  const { kit, req, tool, rec } = run;
  const shaped = await runHandler({
    tool,
    q,
    ...(open ? { open, onBackend: (pid: number) => (run.target = () => pid) } : {}),
    timeLimitMs: rec.limit.deadline - performance.now(),
    withdrawn: req.signal,
    context: {
      access: req.access,
      logger: rec.logger,
      server: kit.server,
      requestId: rec.requestId,
      progress: req.progress ?? NO_PROGRESS.report,
      upstreams: {
        declared: kit.upstreams,
        records: rec.upstreamCalls,
        // A gated call only files its request here: its effects run after approval, from the outbox.
        readOnly: tool.annotations.readOnlyHint || Boolean(tool.approval),
      },
      mcpUpstreams: kit.mcpUpstreams,
    },
    work: (ctx) =>
      inSpan(`handler ${tool.name}`, { attributes: { 'gen_ai.tool.name': tool.name } }, () =>
        handle(kit, req, tool, run.args, ctx, run.writes),
      ),
  });
  const done = rec.event(shaped.outcome, {
    resultSummary: shaped.summary,
    injectionSuspected: shaped.injectionSuspected,
    ...(shaped.approvalId ? { approvalId: shaped.approvalId } : {}),
  });
  if (run.writes) {
    // What changes the world commits with its event, or not at all. The COMMIT then runs without
    // a statement timeout: one cancelled while waiting for a synchronous standby is acknowledged
    // though on the primary alone. The call answers by its deadline whatever the COMMIT does.
    const tx = q as TransactionSql;
    await Promise.all([rec.sink.appendIn(tx, done), tx`select set_config('statement_timeout', '0', true)`]);
    run.committing = true;
    run.commitSent();
  }
  return { shaped, done };
}

/**
 * The handler's run (or, for a gated tool, the approval request), with the tool's context, once the
 * company's policy let it: refused by a policy, it is answered with the policy's sentence and nothing
 * runs or is filed; a gated tool is filed with what the policy asks of people (or as run by policy).
 */
async function handle<A>(
  kit: CallKit<A>,
  req: CallRequest,
  tool: AnyTool,
  args: unknown,
  ctx: ToolContext,
  writes: boolean,
): Promise<Shaped<A>> {
  const verdict = kit.policy
    ? await askPolicy(kit.policy, {
        server: kit.server,
        tool,
        args,
        access: req.access,
        q: ctx.sql,
        counting: writes,
      })
    : undefined;
  if (verdict?.kind === 'refuse') return refusedByPolicy(verdict.reason, verdict);
  if (tool.approval) {
    if (!kit.approvals) throw new Error(`tool ${tool.name} is gated but this server has no approval store`);
    const task = req.task === true;
    const gated = await kit.approvals.request({
      tool,
      args,
      ctx,
      task,
      ...(verdict ? { policy: verdict } : {}),
    });
    const result = shapeResult(
      { ...tool, output: pendingApprovalOutput },
      gated.result,
      kit.auditFullResults,
    );
    if (task) result.summary.task = true;
    if (verdict?.active) Object.assign(result.summary, verdictSummary(verdict));
    const outcome = verdict?.kind === 'run' ? 'approved' : 'pending_approval';
    return { approvalId: gated.approvalId, approval: gated.approval, outcome, ...result };
  }
  if (verdict?.kind === 'approve')
    return refusedByPolicy(
      `The company's policy asks a person to approve ${tool.name}, which runs at once and cannot wait for approval; nothing was done. Tell an operator.`,
      verdict,
    );
  const value = await callHandler(tool, args, ctx);
  const shaped = shapeResult(tool, value, kit.auditFullResults);
  if (verdict?.active) Object.assign(shaped.summary, verdictSummary(verdict));
  return { outcome: 'ok', ...shaped };
}

/** A call a policy refused: its sentence as the answer, the deciding policies in its event. */
function refusedByPolicy<A>(reason: string, verdict: CallVerdict): Shaped<A> {
  return {
    outcome: 'forbidden',
    result: errorResult(reason),
    summary: { error: reason, ...verdictSummary(verdict) },
    injectionSuspected: false,
  };
}
