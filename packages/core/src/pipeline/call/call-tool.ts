import { randomUUID } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { AuditEventInput, AuditWriter, Outcome } from '@bulkhead/audit';
import { isConnectionError, type Sql } from '@bulkhead/db';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { lazyChild } from '../observability/logger.ts';
import type { Access } from './access.ts';
import { pendingApprovalOutput } from './pending-result.ts';
import { textArgumentError } from '../text-safety/argument-text.ts';
import type { ToolCatalog } from '../tool-definition/catalog.ts';
import type { SwitchedOff } from './switched-off.ts';
import type { ReadLanes } from '../database/read-lanes.ts';
import type { AnyTool, ToolContext } from '../tool-definition/define-tool.ts';
import { formatIssues, internalError } from '../tool-definition/errors.ts';
import { withReadConnection, type TransactionSql } from '../database/guarded-sql.ts';
import { NO_PROGRESS, type ProgressReporter } from './progress.ts';
import { shapeResult, type ShapedResult } from './shape-result.ts';
import { maskSecrets, redactArguments } from '../text-safety/secret.ts';
import { ARGUMENT_LIMITS, argumentsOverLimit, type OverLimit } from './argument-limits.ts';
import { NoConnectionInTime, waitAtMost } from './time-limit.ts';
import { UpstreamError } from '../upstream/client.ts';
import type { UpstreamRecord, Upstreams } from '../upstream/upstreams.ts';
import { callHandler, classifyFailure, runHandler } from './run-handler.ts';
import type { ClientInfo, EventDraft, EventSink, RequestAudit } from '../observability/request-audit.ts';
import { inSpan } from '../observability/tracing.ts';
import { renderText } from '../text-safety/untrusted/render.ts';

/** The default time limit of a tool call. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * Files a gated call inside the call's transaction and answers `pending_approval`; implemented by the
 * approval store, whose record of the request (`A`) the call's outcome carries back to its caller.
 */
export interface ApprovalRequester<A = unknown> {
  /** `task`: the client asked for an MCP task; the approval id is then also its task id. */
  request(input: { tool: AnyTool; args: unknown; ctx: ToolContext; task?: boolean }): Promise<{
    approvalId: string;
    result: Record<string, unknown>;
    approval: A;
  }>;
}

/** How a call ended: answered, or filed for approval (with the approval as stored, committed by now). */
export type CallOutcome<A = unknown> =
  | { kind: 'answered'; result: CallToolResult }
  | { kind: 'pending_approval'; result: CallToolResult; approval: A };

/** What the call pipeline needs from its server. */
export interface CallKit<A = unknown> {
  server: string;
  catalog: ToolCatalog;
  sql: Sql;
  /** The read pool, served as lanes (see `createReadLanes`); without it read-only calls borrow from `sql`. */
  reads?: ReadLanes;
  logger: Logger;
  /** The server's writer: what a request writes goes through its own `RequestAudit`, made with it. */
  audit: AuditWriter;
  approvals?: ApprovalRequester<A>;
  auditFullResults: boolean;
  /** The upstreams the server declares (`bulkhead.upstreams`); none when absent. */
  upstreams?: Upstreams;
  /** The tools an operator has switched off: they do not exist for any client (none when absent). */
  switchedOff?: SwitchedOff;
}

/** One tool call as it arrives. */
export interface CallRequest {
  /** As the client sent it: anything but a known tool's name is an unknown tool. */
  name: unknown;
  arguments: unknown;
  access: Access;
  /** The request's audit owner: the call claims its one event from it. */
  audit: RequestAudit;
  clientName?: string | null;
  clientVersion?: string | null;
  /** Aborted when the client withdraws the call or goes away. */
  signal?: AbortSignal;
  /** The client asked for an MCP task: a gated call is filed as one (other calls run as usual). */
  task?: boolean;
  /** Where the handler's `ctx.progress` goes (the client's progress token); nowhere when absent. */
  progress?: ProgressReporter;
}

/** What a call's internal error adds to the sentence every path says. */
const NOTHING_CHANGED =
  ". Nothing was changed. The details are in the server's log under that id; retrying may not help.";

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * What an oversized call is told: the argument whose value passed a bound, or, when the arguments
 * hold too many keys of their own, the first few this tool does not have (as its schema would name them).
 */
function oversizedArguments(over: OverLimit, args: object, input: z.ZodObject): string {
  const { values, depth, chars } = ARGUMENT_LIMITS;
  const bounds = `arguments hold at most ${values} values, ${depth} levels deep and ${chars} characters of text`;
  if (over.field !== null) return `"${over.field.slice(0, 100)}": ${over.problem} (${bounds})`;
  const unknown: string[] = [];
  let count = 0;
  for (const key in args) {
    if (Object.hasOwn(input.shape, key)) continue;
    if (unknown.length < 10) unknown.push(JSON.stringify(key.slice(0, 100)));
    count++;
  }
  const more = count > unknown.length ? ` and ${(count - unknown.length).toLocaleString('en-US')} more` : '';
  return `${unknown.join(', ')}${more}: not arguments of this tool, ${over.problem} in all (${bounds}); remove them`;
}

const WITHHELD =
  'The audit log could not record this call, so its result is withheld. Nothing was changed; try again in a moment, and if it persists, tell the operator.';

/**
 * Runs one tool call through every step after authentication: lookup and
 * scope (a tool outside the token's scopes does not exist for it), shape and
 * schema validation, then the handler (or, for a gated tool, the approval
 * request) on a connection of its own whose settings carry the customer the
 * row policies fence on and the tool's time limit as the statement timeout:
 * in a transaction when the tool may change something, else in read-only mode
 * outside any (`withReadConnection`). The tool's time limit covers the whole call, waiting for the
 * connection included: a call that gets none in time answers that the database could not be reached.
 *
 * No effect without its event: a write tool's audit event is inserted in the
 * same transaction as its effects, and a gated call's request with its
 * `pending_approval` event, so both commit or neither does. A read tool's
 * event is group-committed right after; its result is returned only once the
 * event is committed, and withheld if it cannot be. Every call yields exactly
 * one event, refusals and failures included.
 */
export async function callTool<A>(kit: CallKit<A>, req: CallRequest): Promise<CallOutcome<A>> {
  const started = performance.now();
  const name = typeof req.name === 'string' ? req.name : String(req.name as never);
  // The call's event names the token it runs under, however the request's owner was made.
  req.audit.identify(req.access);
  const sink = req.audit.claim();
  try {
    return await answerCall(kit, req, name, sink);
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    // What fails before the call's own record exists (a bug in reading its arguments) still ends in its one event.
    const { incident, text } = internalError(NOTHING_CHANGED);
    kit.logger.error({ err, incident, requestId: req.audit.requestId, tool: name }, 'tool call failed');
    await sink
      .keep(
        req.audit.event({
          method: 'tools/call',
          client: clientOf(req),
          tool: name,
          arguments: null,
          outcome: 'internal_error',
          since: started,
          resultSummary: { error: text, incident },
        }),
      )
      .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
    return { kind: 'answered', result: errorResult(text) };
  }
}

async function answerCall<A>(
  kit: CallKit<A>,
  req: CallRequest,
  name: string,
  sink: EventSink,
): Promise<CallOutcome<A>> {
  const tool = kit.catalog.byName.get(name);
  const rec = callRecord(kit, req, name, tool, sink);
  const off = kit.switchedOff ? await kit.switchedOff.names() : undefined;
  if (!tool || !req.access.scopes.includes(tool.scope) || off?.has(name)) {
    // A tool outside the token's scopes, or switched off, does not exist for this client, as in its tools/list.
    const names =
      req.arguments && typeof req.arguments === 'object' ? Object.keys(req.arguments).slice(0, 50) : [];
    await rec.sink
      .append(rec.event('unknown_tool', { resultSummary: { argument_names: names } }))
      .catch((err: unknown) => rec.logger.error({ err }, 'audit event could not be written'));
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name.slice(0, 200)}`);
  }
  const args = validArguments(tool, req.arguments, rec.oversized);
  if (typeof args === 'string')
    return { kind: 'answered', result: await rec.refuse('invalid_arguments', args) };
  let approval: { value: A } | undefined;
  const result = await runCall(kit, req, tool, args, rec, (a) => (approval = { value: a }));
  return approval
    ? { kind: 'pending_approval', result, approval: approval.value }
    : { kind: 'answered', result };
}

/** The client a call's event names, as the request carries it. */
function clientOf(req: CallRequest): ClientInfo {
  return { name: req.clientName ?? null, version: req.clientVersion ?? null };
}

/** One call's audit event in the making, and how it is written and its answer released. */
interface CallRecord {
  sink: EventSink;
  requestId: string;
  logger: Logger;
  /** The arguments' first bound passed (walked before anything else looks at them), or null. */
  oversized: OverLimit | null;
  /** The call's requests to upstreams, kept in its event (refused ones included). */
  upstreamCalls: UpstreamRecord[];
  /** The time limit and its deadline, once the tool is known to be callable. */
  limit: { timeoutMs: number; deadline: number };
  event(outcome: Outcome, extra?: Partial<EventDraft>): AuditEventInput;
  /**
   * Records the outcome on its own (nothing else to commit with it) and answers, or withholds the
   * answer. A refusal discloses nothing and says that nothing was done: it goes out even when the
   * database is away, its event held until the database is back. A result goes out only once its
   * event is committed.
   */
  finish(outcome: Outcome, result: CallToolResult, extra?: Partial<EventDraft>): Promise<CallToolResult>;
  /** Answers with `result` once `done` is committed; withholds it when the event cannot be written. */
  release(done: AuditEventInput, result: CallToolResult): Promise<CallToolResult>;
  refuse(outcome: Outcome, text: string): Promise<CallToolResult>;
}

function callRecord(
  kit: CallKit<unknown>,
  req: CallRequest,
  name: string,
  tool: AnyTool | undefined,
  sink: EventSink,
): CallRecord {
  const started = performance.now();
  const requestId = req.audit.requestId;
  const logger = lazyChild(kit.logger, { requestId, tool: name });
  // Walked before anything else looks at them (the schema, the audit copy): cheap, and bounded whatever was sent.
  const oversized = tool ? argumentsOverLimit(req.arguments) : null;
  const base = {
    method: 'tools/call',
    client: clientOf(req),
    tool: name,
    // An unknown tool's arguments are not recorded: which of them are secret is unknown; oversized ones neither.
    arguments: tool && !oversized ? redactArguments(tool.input, req.arguments) : null,
  };
  const upstreamCalls: UpstreamRecord[] = [];
  const limit = { timeoutMs: DEFAULT_TIMEOUT_MS, deadline: Number.POSITIVE_INFINITY };
  const rec: CallRecord = {
    sink,
    requestId,
    logger,
    oversized,
    upstreamCalls,
    limit,
    event: (outcome, extra = {}) =>
      req.audit.event({
        ...base,
        outcome,
        since: started,
        ...extra,
        ...(upstreamCalls.length
          ? {
              resultSummary: {
                ...(extra.resultSummary as Record<string, unknown> | undefined),
                upstream: [...upstreamCalls],
              },
            }
          : {}),
      }),
    finish: async (outcome, result, extra = {}) => {
      if (result.isError) {
        await sink
          .keep(rec.event(outcome, extra))
          .catch((err: unknown) => logger.error({ err, outcome }, 'audit event could not be written'));
        return result;
      }
      return rec.release(rec.event(outcome, extra), result);
    },
    release: async (given, result) => {
      // One id for both attempts: if the first committed though its answer was lost, the second is not stored twice.
      const done = { ...given, id: given.id ?? randomUUID() };
      try {
        // Not past the call's time limit (or a moment after a call that used it up): a database that
        // stalls in a failover would otherwise hold the answer through every queued batch's connect timeout.
        // Given up on, the event may still commit; the withheld one below has the same id and is then not stored.
        const until = Math.max(limit.deadline, performance.now() + 1_000);
        await waitAtMost(sink.append(done), until, limit.timeoutMs);
        return result;
      } catch (err) {
        logger.error(
          { err, outcome: done.outcome },
          'audit event could not be written; the result is withheld',
        );
        if (!isConnectionError(err)) return errorResult(WITHHELD);
        const text = `${name} could not record its result in the audit log because the database is unreachable, so the result is withheld. Try again in a few seconds.`;
        await sink
          .keep({ ...done, outcome: 'unavailable', resultSummary: { error: text, withheld: done.outcome } })
          .catch(() => {});
        return errorResult(text);
      }
    },
    refuse: (outcome, text) => rec.finish(outcome, errorResult(text), { resultSummary: { error: text } }),
  };
  return rec;
}

/** The parsed arguments of a call, or what is wrong with them (a refusal's text). */
function validArguments(
  tool: AnyTool,
  given: unknown,
  oversized: OverLimit | null,
): { value: unknown } | string {
  const args = given ?? {};
  const invalid = (what: string) =>
    `Invalid arguments — ${what}. Nothing was done; call again with corrected arguments.`;
  if (typeof args !== 'object' || Array.isArray(args))
    return invalid('arguments: expected an object of named arguments');
  if (oversized) return invalid(oversizedArguments(oversized, args, tool.input));
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return formatIssues(parsed.error, maskSecrets(tool.input, args));
  return textArgumentError(parsed.data) ?? { value: parsed.data };
}

/** What the handler's run gives back: its shaped result, its outcome, and a filed approval. */
type Shaped<A> = ShapedResult & { approvalId?: string; approval?: A; outcome: Outcome };

/**
 * The call itself, past validation: the handler (or the approval request) on a connection of its
 * own, in a transaction when the tool may change something, under one time limit that counts the
 * wait for the connection too; then its event, committed with its effects or right after.
 */
async function runCall<A>(
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
  const writes = !tool.annotations.readOnlyHint || Boolean(tool.approval);
  /** The backend a withdrawn call may cancel, once known (none while it shares a read lane). */
  let target: () => number | undefined = () => undefined;
  // Past this point the transaction's COMMIT is on its way: a lost connection leaves its fate unknown.
  let committing = false;
  let commitSent!: () => void;
  const commitBegun = new Promise<void>((resolve) => (commitSent = resolve));
  const stop = () => {
    // A withdrawn call's query would run on until its statement timeout: stop it now. Not its COMMIT:
    // cancelled while it waits for a synchronous standby, it would commit on the primary alone.
    const pid = target();
    if (pid !== undefined && !committing) kit.sql`select pg_cancel_backend(${pid})`.catch(() => {});
  };
  req.signal?.addEventListener('abort', stop, { once: true });
  try {
    // The proof goes only where the database fences on a customer: other calls keep sharing read lanes.
    const proof = req.access.customerId === null ? undefined : req.access.proof;
    const settings = { customerId: req.access.customerId, proof, timeoutMs };
    /** The call on the connection `q`: a transaction whose settings `open` sends, or a read connection set already. */
    const run = async (q: TransactionSql | Sql, open?: typeof settings) => {
      const shaped = await runHandler({
        tool,
        q,
        ...(open ? { open, onBackend: (pid: number) => (target = () => pid) } : {}),
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
        },
        work: (ctx) =>
          inSpan(`handler ${tool.name}`, { attributes: { 'gen_ai.tool.name': tool.name } }, () =>
            handle(kit, req, tool, args.value, ctx),
          ),
      });
      const done = rec.event(shaped.outcome, {
        resultSummary: shaped.summary,
        injectionSuspected: shaped.injectionSuspected,
        ...(shaped.approvalId ? { approvalId: shaped.approvalId } : {}),
      });
      if (writes) {
        // What changes the world commits with its event, or not at all. The COMMIT then runs without
        // a statement timeout: one cancelled while waiting for a synchronous standby is acknowledged
        // though on the primary alone. The call answers by its deadline whatever the COMMIT does.
        const tx = q as TransactionSql;
        await Promise.all([
          rec.sink.appendIn(tx, done),
          tx`select set_config('statement_timeout', '0', true)`,
        ]);
        committing = true;
        commitSent();
      }
      return { shaped, done };
    };
    const outcome = writes
      ? await committedInTime(
          transaction(kit.sql, rec.limit, req.signal, (tx: TransactionSql) => run(tx, settings)),
          commitBegun,
          rec,
        )
      : await withReadConnection(
          kit.sql,
          kit.reads,
          { ...settings, onStoppable: (t) => (target = t), signal: req.signal },
          (conn) => run(conn),
        );
    // Committed with its event by now: a task made of it exists for tasks/get on every replica.
    if (outcome.shaped.approval !== undefined) filed(outcome.shaped.approval);
    return writes ? outcome.shaped.result : rec.release(outcome.done, outcome.shaped.result);
  } catch (err) {
    return failed(err, tool, req, rec, { writes, committing });
  } finally {
    req.signal?.removeEventListener('abort', stop);
  }
}

/** A write call's COMMIT that outlived the call's time limit: the change may have been made, or not yet. */
class CommitUnconfirmed extends Error {
  override readonly name = 'CommitUnconfirmed';
}

/**
 * The transaction's result, waiting for its COMMIT until the call's deadline (or a moment after a call
 * that used it up), however long the database takes to confirm it (a synchronous standby away in a
 * failover). Past that the call answers that the change may have been made, and the COMMIT goes on
 * alone: its event stands if it commits, and a refusal is recorded if it fails.
 */
async function committedInTime<T>(work: Promise<T>, commitBegun: Promise<void>, rec: CallRecord): Promise<T> {
  work.catch(() => {});
  const first = await Promise.race([work, commitBegun.then(() => COMMITTING)]);
  if (first !== COMMITTING) return first as T;
  const grace = Math.min(1_000, rec.limit.timeoutMs / 2);
  try {
    return await waitAtMost(
      work,
      Math.max(rec.limit.deadline, performance.now() + grace),
      rec.limit.timeoutMs,
    );
  } catch (err) {
    if (!(err instanceof NoConnectionInTime)) throw err;
    rec.logger.warn('the COMMIT was not confirmed within the time limit; it goes on alone');
    work.catch((e: unknown) => {
      // No event was committed: the call's one event is this refusal.
      const fate = isConnectionError(e)
        ? 'lost its connection, so it may or may not have been made'
        : 'failed, so it was not made';
      void rec.refuse(
        'unavailable',
        `The call was answered before its COMMIT ended; the COMMIT then ${fate}.`,
      );
    });
    throw new CommitUnconfirmed();
  }
}
const COMMITTING = Symbol('committing');

/** The handler's run (or, for a gated tool, the approval request), with the tool's context. */
async function handle<A>(
  kit: CallKit<A>,
  req: CallRequest,
  tool: AnyTool,
  args: unknown,
  ctx: ToolContext,
): Promise<Shaped<A>> {
  if (tool.approval) {
    if (!kit.approvals) throw new Error(`tool ${tool.name} is gated but this server has no approval store`);
    const task = req.task === true;
    const gated = await kit.approvals.request({ tool, args, ctx, task });
    const result = shapeResult(
      { ...tool, output: pendingApprovalOutput },
      gated.result,
      kit.auditFullResults,
    );
    if (task) result.summary.task = true;
    return { ...result, approvalId: gated.approvalId, approval: gated.approval, outcome: 'pending_approval' };
  }
  const value = await callHandler(tool, args, ctx);
  return { ...shapeResult(tool, value, kit.auditFullResults), outcome: 'ok' };
}

/** What a call that failed answers, and records: a timeout, a cancellation, a refusal, or an internal error. */
function failed(
  err: unknown,
  tool: AnyTool,
  req: CallRequest,
  rec: CallRecord,
  state: { writes: boolean; committing: boolean },
): Promise<CallToolResult> {
  const failure = classifyFailure(err, req.signal);
  if (failure.kind === 'cancelled')
    return rec.refuse('cancelled', `${tool.name} was cancelled by the client; nothing it did was kept.`);
  if (failure.kind === 'timeout') {
    const text = `${tool.name} did not finish within ${rec.limit.timeoutMs / 1000} s and was stopped; nothing it did was kept. Try again, or narrow the request.`;
    return rec.refuse('timeout', text);
  }
  if (failure.kind === 'tool_error') {
    const { error } = failure;
    if (error instanceof UpstreamError) return rec.refuse(error.outcome, error.message);
    return rec.refuse(
      'tool_error',
      error.quoted ? `${error.message}\n${renderText(error.quoted)}` : error.message,
    );
  }
  if (err instanceof CommitUnconfirmed) {
    const text = `${tool.name} did not finish within ${rec.limit.timeoutMs / 1000} s while committing: the database has not confirmed the change, which may have been made. Check before repeating it; try again in a few seconds.`;
    // Its own event is committed with the change if the COMMIT goes through (or recorded by `committedInTime` if not).
    return Promise.resolve(errorResult(text));
  }
  // A read-only call runs read-only on purpose: its write refused (25006) is the tool's fault, not a failover's.
  const ownReadOnly = !state.writes && (err as { code?: string }).code === '25006';
  if (isConnectionError(err) && !ownReadOnly) {
    rec.logger.warn({ err }, 'database unavailable');
    // A change whose COMMIT lost its connection may or may not have been made: say so rather than guess.
    return rec.refuse(
      'unavailable',
      state.writes && state.committing
        ? `${tool.name} lost its connection to the database while committing: the change may have been made. Check before repeating it; try again in a few seconds.`
        : `${tool.name} could not reach the database. Nothing was changed; try again in a few seconds.`,
    );
  }
  const { incident, text } = internalError(NOTHING_CHANGED);
  rec.logger.error({ err, incident }, 'tool failed');
  return rec.finish('internal_error', errorResult(text), { resultSummary: { error: text, incident } });
}

/** How often a transaction whose BEGIN lost its connection is begun again, before `fn` ran. */
const BEGIN_ATTEMPTS = 3;
/** A BEGIN that took longer than this to fail met a database that is away, not a stale connection. */
const BEGIN_QUICK_FAILURE_MS = 500;

/**
 * `sql.begin(fn)`, waiting for its connection no longer than the call's time limit (or until the
 * client withdraws the call): a transaction given up on before it began rolls back at once, before
 * `fn` runs. Once `fn` runs, its own time limit holds.
 *
 * A BEGIN that lost its connection (a pooled connection whose backend was terminated, before the pool
 * saw its socket close) is begun again on another, within the deadline: `fn` had not run, so nothing
 * was done twice. A connection lost once `fn` runs is the call's error.
 */
async function transaction<T>(
  sql: Sql,
  limit: { timeoutMs: number; deadline: number },
  signal: AbortSignal | undefined,
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const began = { value: false };
    const started = performance.now();
    try {
      return await transactionOnce(sql, limit, signal, began, fn);
    } catch (err) {
      // Only a BEGIN that failed at once (a stale pooled connection) is begun again; one that waited for
      // its connection met a database that is away, and would wait as long again.
      const again =
        !began.value &&
        performance.now() - started < BEGIN_QUICK_FAILURE_MS &&
        attempt < BEGIN_ATTEMPTS &&
        isConnectionError(err) &&
        !signal?.aborted &&
        performance.now() + 100 < limit.deadline;
      if (!again) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
    }
  }
}

async function transactionOnce<T>(
  sql: Sql,
  limit: { timeoutMs: number; deadline: number },
  signal: AbortSignal | undefined,
  began: { value: boolean },
  fn: (tx: TransactionSql) => Promise<T>,
): Promise<T> {
  let abandoned = false;
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const done = sql.begin((tx: TransactionSql) => {
    if (abandoned) throw new NoConnectionInTime(limit.timeoutMs);
    began.value = true;
    entered();
    return fn(tx);
  }) as Promise<T>;
  done.catch(() => {});
  try {
    await waitAtMost(Promise.race([inside, done]), limit.deadline, limit.timeoutMs, signal);
  } catch (err) {
    abandoned = true;
    throw err;
  }
  return done;
}
