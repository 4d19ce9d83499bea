import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { createAuditWriter, type AuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import { DEFAULT_TIMEOUT_MS } from '../pipeline/call/time-limit.ts';
import type { ServerDefinition } from '../pipeline/tool-definition/server-definition.ts';
import type { AnyTool } from '../pipeline/tool-definition/define-tool.ts';
import { formatIssues, internalError } from '../pipeline/tool-definition/errors.ts';
import type { TransactionSql } from '../pipeline/database/guarded-sql.ts';
import { NO_PROGRESS } from '../pipeline/call/progress.ts';
import { tracedSink } from '../pipeline/observability/request-audit.ts';
import { callHandler, classifyFailure, runHandler } from '../pipeline/call/run-handler.ts';
import { inSpan, linkTo, ROOT_CONTEXT } from '../pipeline/observability/tracing.ts';
import { scanUntrusted } from '../pipeline/text-safety/untrusted/detect.ts';
import { checkApprovedValues, ChangedSinceApproval } from './approved-values.ts';
import { executionEvent } from './audit-trail.ts';
import { expireOverdue } from './decide.ts';
import { DEFAULT_RETRY, createOutbox, dispatchOutbox, type Deliverer, type RetryPolicy } from './outbox.ts';
import {
  APPROVAL_COLUMNS,
  argumentsHash,
  storedForm,
  type ApprovalFailure,
  type ApprovalRecord,
} from './store.ts';
import { smtpDeliverer, type SmtpOptions } from './smtp.ts';
import { APPROVAL_WEBHOOK, webhookDeliverer } from './webhook.ts';
import { UPSTREAM_EFFECT, upstreamDeliverer } from './upstream-effect.ts';
import type { Upstreams } from '../pipeline/upstream/upstreams.ts';
import type { McpUpstreams } from '../pipeline/mcp-upstream/upstreams.ts';
import { MCP_UPSTREAM_EFFECT, mcpUpstreamDeliverer } from './mcp-upstream-delivery.ts';

/** What {@link startApprovalExecutor} needs. */
export interface ApprovalExecutorOptions {
  sql: Sql;
  logger: Logger;
  audit?: AuditWriter;
  /** `BULKHEAD_APPROVAL_WEBHOOK_URL`; without it queued notifications fail as undeliverable. */
  webhookUrl?: string | undefined;
  /** The server's declared upstreams: `upstream` rows of the outbox are delivered to them. */
  upstreams?: Upstreams;
  /** The server's upstream MCP servers: `mcp_upstream` rows of the outbox are sent to them, at most once. */
  mcpUpstreams?: McpUpstreams;
  /** `BULKHEAD_SMTP_URL` and `BULKHEAD_MAIL_FROM`; without them queued e-mails fail as undeliverable. */
  smtp?: SmtpOptions | undefined;
  /** Extra or replacement deliverers by outbox kind (defaults: `email` over SMTP, `approval_webhook`, `upstream`). */
  deliverers?: Record<string, Deliverer>;
  /** The safety-net sweep interval (default 5 s); NOTIFY normally wakes the executor at once. */
  sweepIntervalMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Deliveries per outbox pass before the loop yields and starts the next (default 20). */
  deliveriesPerPass?: number;
  /** How long a row being delivered stays claimed (default 60 s, above the webhook's 10 s and SMTP's 30 s limits). */
  deliveryLeaseMs?: number;
  /** Recorded as `executed_by`; defaults to host:pid:random. */
  instanceId?: string;
}

/** A running executor. */
export interface ApprovalExecutor {
  readonly instanceId: string;
  /** Resolves once LISTEN is established and the start-up pass over approved actions is done (deliveries go on apart). */
  readonly ready: Promise<void>;
  /** Runs passes until no action and no due delivery is left (tests; the executor does this by itself). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

interface Outcome {
  status: 'executed' | 'failed';
  result: unknown;
  error: string | null;
  failure: ApprovalFailure | null;
}

/** What the executor's jobs share: who it runs for, where, and whether it is stopping. */
interface ExecutorContext {
  def: ServerDefinition;
  server: string;
  sql: Sql;
  logger: Logger;
  audit: AuditWriter;
  instanceId: string;
  upstreams: Upstreams | undefined;
  /** Aborted when the executor stops. */
  stopping: AbortSignal;
}

/** A loop of passes: see {@link worker}. */
interface Worker {
  kick(): void;
  idle(): Promise<void>;
}

/**
 * Runs the approved actions of `def`'s gated tools, exactly once each:
 *
 * - wakes on NOTIFY (a decision) within a second, at start (anything approved
 *   while no process ran) and every few seconds as a safety net;
 * - claims one approval at a time with `FOR UPDATE SKIP LOCKED`, so replicas
 *   share the work and never run the same approval ({@link runNext});
 * - runs only what an approver decided: a decision the console's role wrote
 *   (no server role can set `approved`), naming the arguments hash the stored
 *   arguments still have ({@link check});
 * - reads the values the tool's effect uses again and refuses unless they are the approved ones;
 * - runs the handler under its time limit inside the claiming transaction
 *   (`ctx.sql`), so its database effects and the status `executed` commit
 *   together; a kill before the commit rolls both back and the approval runs
 *   on the next start; effects outside the database go through `ctx.outbox`
 *   ({@link run});
 * - records the result (or the failure) with its audit event in the same
 *   transaction ({@link record}), and expires overdue requests, each with its
 *   event ({@link approvalLoop});
 * - delivers the outbox (webhook notifications, e-mails) in a loop of its own,
 *   woken by its own NOTIFY and retry timer, each row claimed with a lease and
 *   delivered outside any transaction, so that a slow or hanging receiver
 *   never delays an approved action ({@link outboxLoop}).
 */
export function startApprovalExecutor(
  def: ServerDefinition,
  options: ApprovalExecutorOptions,
): ApprovalExecutor {
  const { sql } = options;
  const server = def.name;
  const stopping = new AbortController();
  const executor: ExecutorContext = {
    def,
    server,
    sql,
    logger: options.logger.child({ component: 'approvals' }),
    audit: options.audit ?? createAuditWriter(sql),
    instanceId: options.instanceId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    upstreams: options.upstreams,
    stopping: stopping.signal,
  };
  const { logger } = executor;
  const sweepMs = options.sweepIntervalMs ?? 5_000;

  // Approved actions and deliveries run in separate loops: a slow or hanging receiver delays the
  // next delivery, never an approved action.
  const outbox = outboxLoop(executor, options, sweepMs);
  const approvals = approvalLoop(executor, outbox.kick);

  const wake = (kick: () => void) => (payload: string) => {
    if (payload === server) kick();
  };
  const listening = Promise.all([
    sql.listen('bulkhead_approvals', wake(approvals.kick), approvals.kick),
    sql.listen('bulkhead_outbox', wake(outbox.kick), outbox.kick),
  ]);
  const sweep = setInterval(() => {
    approvals.kick();
    outbox.kick();
  }, sweepMs);
  sweep.unref();
  const drain = async () => {
    approvals.kick();
    await approvals.idle();
    // After the actions: the rows they queued are committed, so this pass sees them.
    outbox.kick();
    await outbox.idle();
  };
  const ready = listening.then(async () => {
    outbox.kick();
    approvals.kick();
    await approvals.idle();
  });
  ready.catch((err: unknown) => logger.error({ err }, 'approval executor could not LISTEN'));

  return {
    instanceId: executor.instanceId,
    ready,
    drain,
    async stop() {
      stopping.abort();
      clearInterval(sweep);
      outbox.stopRetrying();
      await Promise.all([approvals.idle(), outbox.idle()]);
      const listeners = await listening.catch(() => []);
      await Promise.all(listeners.map((l) => l.unlisten().catch(() => {})));
    },
  };
}

/** Expires overdue requests, then runs approved actions until none is left; `executed` kicks the outbox after each. */
function approvalLoop(executor: ExecutorContext, executed: () => void): Worker {
  return worker(executor, 'approval', async () => {
    await expireOverdue(executor.sql, executor.audit, executor.server);
    for (let id = await runNext(executor); id && !executor.stopping.aborted; id = await runNext(executor))
      executed();
  });
}

/**
 * Delivers due outbox rows, a pass at a time, outside any transaction; when rows wait for a retry, a
 * timer kicks the next pass at the first one's due time (at most a sweep away).
 */
function outboxLoop(
  executor: ExecutorContext,
  options: ApprovalExecutorOptions,
  sweepMs: number,
): Worker & { stopRetrying(): void } {
  const retry: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const deliveriesPerPass = options.deliveriesPerPass ?? 20;
  const leaseMs = options.deliveryLeaseMs ?? 60_000;
  const deliverers: Record<string, Deliverer> = {
    ...(options.smtp ? { email: smtpDeliverer(options.smtp) } : {}),
    ...(options.webhookUrl ? { [APPROVAL_WEBHOOK]: webhookDeliverer(options.webhookUrl) } : {}),
    ...(options.upstreams?.byName.size ? { [UPSTREAM_EFFECT]: upstreamDeliverer(options.upstreams) } : {}),
    ...(options.mcpUpstreams?.byName.size
      ? { [MCP_UPSTREAM_EFFECT]: mcpUpstreamDeliverer(options.mcpUpstreams) }
      : {}),
    ...options.deliverers,
  };
  let retryTimer: NodeJS.Timeout | undefined;
  const outbox = worker(executor, 'outbox', async () => {
    const { more, nextDueAt } = await dispatchOutbox(
      executor.sql,
      executor.server,
      deliverers,
      executor.logger,
      retry,
      {
        max: deliveriesPerPass,
        leaseMs,
        signal: executor.stopping,
      },
    );
    clearTimeout(retryTimer);
    if (nextDueAt && !more && !executor.stopping.aborted) {
      retryTimer = setTimeout(
        outbox.kick,
        Math.min(Math.max(nextDueAt.getTime() - Date.now(), 0) + 20, sweepMs),
      );
      retryTimer.unref();
    }
    return more;
  });
  return { ...outbox, stopRetrying: () => clearTimeout(retryTimer) };
}

/**
 * One worker: a kick starts a pass, or asks for one more when a pass is
 * running, so that work signalled meanwhile is never missed.
 */
function worker(executor: ExecutorContext, name: string, pass: () => Promise<boolean | void>): Worker {
  let running: Promise<void> | null = null;
  let again = false;
  const kick = (): void => {
    if (executor.stopping.aborted) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          if (await pass()) again = true;
        } catch (err) {
          executor.logger.error({ err }, `${name} pass failed; retrying at the next sweep`);
        }
      } while (again && !executor.stopping.aborted);
      running = null;
    })();
  };
  const idle = async () => {
    while (running) await running;
  };
  return { kick, idle };
}

/** Claims and runs the oldest runnable approval; returns its id, or null when there is none. */
async function runNext(executor: ExecutorContext): Promise<string | null> {
  return executor.sql.begin(async (tx) => {
    const [approval] = await tx<ApprovalRecord[]>`
      select ${tx.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals
      where server = ${executor.server} and status = 'approved'
      order by decided_at, id limit 1
      for update skip locked`;
    if (!approval) return null;
    // A trace of its own, linked to the call that filed it: the approval may run days later.
    return inSpan(
      `execute_approval ${approval.tool}`,
      {
        attributes: { 'gen_ai.tool.name': approval.tool, 'bulkhead.approval.id': approval.id },
        links: linkTo(approval.filedInTrace),
      },
      () => execute(executor, tx, approval),
      ROOT_CONTEXT,
    );
  });
}

/** Runs a claimed approval and records how it ended, in the claiming transaction; returns its id. */
async function execute(
  executor: ExecutorContext,
  tx: TransactionSql,
  approval: ApprovalRecord,
): Promise<string> {
  const started = performance.now();
  const verdict = check(executor, approval);
  const outcome: Outcome =
    'refused' in verdict
      ? {
          status: 'failed',
          result: null,
          failure: 'refused',
          error: `Refused: ${verdict.refused} Nothing was done.`,
        }
      : await run(executor, tx, approval, verdict.tool, verdict.args);
  await record(executor, tx, approval, outcome, Math.round(performance.now() - started));
  return approval.id;
}

/**
 * Runs only what a person approved: a decision the console's role wrote (the database lets no other
 * role set `approved`), naming this approval's arguments hash, which the stored arguments still have.
 */
function check(
  executor: ExecutorContext,
  approval: ApprovalRecord,
): { refused: string } | { tool: AnyTool; args: unknown } {
  const tool = executor.def.catalog.byName.get(approval.tool);
  if (!tool?.approval)
    return { refused: `${approval.tool} is no longer a gated tool of ${executor.server}.` };
  if (!approval.decidedArgumentsHash || (!approval.decidedByTokenId && !approval.approvedByPolicy))
    return { refused: 'The approval carries no decision by an approver token.' };
  if (argumentsHash(approval.arguments) !== approval.argumentsHash)
    return {
      refused: 'The stored arguments no longer match their hash: they were changed after the request.',
    };
  if (approval.decidedArgumentsHash !== approval.argumentsHash)
    return { refused: 'The arguments differ from those the approver approved.' };
  const parsed = tool.input.safeParse(approval.arguments);
  if (!parsed.success) return { refused: formatIssues(parsed.error, approval.arguments) };
  return { tool, args: parsed.data };
}

/**
 * Runs the handler as a live call would ({@link runHandler}: its customer, time limit and context, its
 * value held to the tool's output), in a savepoint of the claiming transaction.
 */
async function run(
  executor: ExecutorContext,
  tx: TransactionSql,
  approval: ApprovalRecord,
  tool: AnyTool,
  args: unknown,
): Promise<Outcome> {
  const { server } = executor;
  const log = executor.logger.child({
    approvalId: approval.id,
    tool: approval.tool,
    requestId: approval.requestId,
  });
  const timeoutMs = tool.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  try {
    const value = await tx.savepoint((sp) =>
      runHandler({
        tool,
        q: sp,
        open: { customerId: approval.customerId, approvalId: approval.id, timeoutMs },
        timeLimitMs: timeoutMs,
        context: {
          access: {
            tokenId: approval.requestedByTokenId ?? 'unknown',
            label: approval.requestedByLabel ?? 'unknown',
            server,
            scopes: approval.requestedScopes,
            customerId: approval.customerId,
          },
          logger: log,
          server,
          requestId: approval.requestId,
          // Nobody listens: the client that asked is not connected to an approved run.
          progress: NO_PROGRESS.report,
          // Reads only: an effect on an upstream is queued in the outbox, delivered after the commit.
          upstreams: { declared: executor.upstreams, records: [], readOnly: true },
          outbox: (guarded) => createOutbox(guarded, server, approval.id),
          approval: {
            id: approval.id,
            decidedBy: approval.decidedBy ?? 'unknown',
            preview: approval.preview,
            values: approval.approvedValues,
          },
        },
        work: async (ctx) => {
          // The world may have changed since the person looked: run only what they approved.
          await checkApprovedValues(tool, args, ctx, approval.approvedValues);
          return callHandler(tool, args, ctx);
        },
      }),
    );
    return {
      status: 'executed',
      result: storedForm(scanUntrusted(value).value),
      error: null,
      failure: null,
    };
  } catch (err) {
    const failure = classifyFailure(err);
    if (failure.kind === 'timeout' || failure.kind === 'cancelled')
      return {
        status: 'failed',
        result: null,
        failure: 'timeout',
        error: `${tool.name} did not finish within ${timeoutMs / 1000} s and was stopped; none of its changes were kept.`,
      };
    if (failure.kind === 'tool_error')
      return {
        status: 'failed',
        result: null,
        failure: failure.error instanceof ChangedSinceApproval ? 'refused' : 'tool_error',
        error: failure.error.message,
      };
    const { incident, text } = internalError(
      "; none of its changes were kept. The details are in the server's log under that id.",
    );
    log.error({ err, incident }, 'approved action failed');
    return { status: 'failed', result: null, failure: 'internal_error', error: text };
  }
}

/** Records the outcome of approval `a`, which took `ms`, with its audit event, in the claiming transaction. */
async function record(
  executor: ExecutorContext,
  tx: TransactionSql,
  approval: ApprovalRecord,
  outcome: Outcome,
  ms: number,
) {
  const [done] = await tx<ApprovalRecord[]>`
    update bulkhead_approvals set status = ${outcome.status}, executed_at = now(), executed_by = ${executor.instanceId},
      duration_ms = ${ms}, result = ${outcome.result === null ? null : tx.json(outcome.result as never)},
      error = ${outcome.error}, failure = ${outcome.failure}
    where id = ${approval.id}
    returning ${tx.unsafe(APPROVAL_COLUMNS)}`;
  // The outcome and its event commit together: the story in the log is never behind the row.
  await tracedSink(executor.audit).appendIn(tx, executionEvent(done!));
  const line = {
    approvalId: approval.id,
    tool: approval.tool,
    status: outcome.status,
    durationMs: ms,
    instanceId: executor.instanceId,
  };
  if (outcome.status === 'executed') executor.logger.info(line, 'approved action executed');
  else executor.logger.warn({ ...line, error: outcome.error }, 'approved action failed');
}
