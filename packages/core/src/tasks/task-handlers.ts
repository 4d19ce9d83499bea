import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { AuditEventInput, Outcome } from '@bulkhead/audit';
import { isConnectionError } from '@bulkhead/db';
import { z } from 'zod';
import type { Access } from '../pipeline/call/access.ts';
import { internalError } from '../pipeline/tool-definition/errors.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import type { CallKit } from '../pipeline/call/call-tool.ts';
import type { EventSink, RequestAudit } from '../pipeline/observability/request-audit.ts';
import type { TaskAwareServer } from './task-server.ts';
import {
  getTaskResult,
  RELATED_TASK,
  taskState,
  TASKS_EXTENSION,
  wireTask,
  type TaskWire,
} from './task-state.ts';
import type { ResultWaits } from './result-waits.ts';
import { findTask, listTasks, withdrawTask, type TaskOwner } from './task-store.ts';
import { traceMcpRequest } from '../pipeline/observability/tracing.ts';

/** The task methods of both wires; every one is answered, and audited, by this module. */
export const TASK_METHODS = [
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'tasks/update',
] as const;
type TaskMethod = (typeof TASK_METHODS)[number];

/** Which methods each wire has (2026-07-28 dropped `tasks/result` and `tasks/list`, and added `tasks/update`). */
const ON_WIRE: Record<TaskWire, ReadonlySet<TaskMethod>> = {
  '2025-11-25': new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']),
  '2026-07-28': new Set(['tasks/get', 'tasks/update', 'tasks/cancel']),
};

/** What the task handlers need from the protocol instance that carries them. */
export interface TaskHandlerOptions {
  kit: CallKit;
  /** The caller, from its token (resolved again per request on stdio, a refusal then being the request's event). */
  who: (audit: RequestAudit) => Promise<Access>;
  /** The audit owner of the request that carries the message: each task request claims its one event. */
  audit: () => RequestAudit;
  /** The client's name and version, as the request or the `initialize` carries them. */
  client: (ctx: ServerContext) => { name: string | null; version: string | null };
  /** False on a server without gated tools: no task ever exists there, and every task method says so. */
  runsTasks: boolean;
  /** Caps on open `tasks/result` waits, shared by the process's requests; none when absent. */
  resultWaits?: ResultWaits | undefined;
}

/** A refusal: the JSON-RPC error the client gets, and what the audit log records of it. */
class TaskRefusal extends Error {
  constructor(
    readonly error: ProtocolError,
    readonly outcome: Outcome,
    readonly summary: Record<string, unknown>,
    readonly approval?: ApprovalRecord,
  ) {
    super(error.message);
  }
}

/** What one handled request answers and records. */
interface Answer {
  result: Result;
  outcome: Outcome;
  summary: Record<string, unknown>;
  approval?: ApprovalRecord;
  /** The event is already written (with the effect, in its transaction). */
  recorded?: boolean;
}

const MAX_TASK_ID = 100;

/** The JSON-RPC error of a `tasks/result` refused because the caps on open waits are reached (server error range). */
export const RESULT_WAITS_FULL = -32000;

function notFound(id: string, server: string): TaskRefusal {
  return new TaskRefusal(
    new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Task ${id.slice(0, MAX_TASK_ID)} not found: no task of this token on ${server} has that id.`,
    ),
    'invalid_arguments',
    { reason: 'unknown_task' },
  );
}

function invalid(text: string): TaskRefusal {
  return new TaskRefusal(new ProtocolError(ProtocolErrorCode.InvalidParams, text), 'invalid_arguments', {
    error: text,
  });
}

/** `params.taskId`, which every task method but `tasks/list` needs. */
function taskIdOf(method: string, params: Record<string, unknown>): string {
  const id = params.taskId;
  if (typeof id !== 'string' || !id || id.length > MAX_TASK_ID)
    throw invalid(`${method} needs params.taskId: the task id string a task-augmented tools/call returned.`);
  return id;
}

/** Whether a 2026-07-28 request declares the tasks extension in its own capabilities. */
export function declaresTasks(ctx: ServerContext): boolean {
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const caps = envelope?.[CLIENT_CAPABILITIES_META_KEY] as
    { extensions?: Record<string, unknown> } | undefined;
  return caps?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Task methods take any params object; each handler checks the fields it reads. Built once, not per request. */
const ANY_PARAMS = z.looseObject({});

/**
 * Answers the task methods of a server: `tasks/get`, `tasks/cancel`, and per wire `tasks/result`
 * and `tasks/list` (2025-11-25) or `tasks/update` (2026-07-28). A task is an approval filed by a
 * task-augmented `tools/call`; its id is the approval id and it belongs to the token that filed it
 * — any other id is "not found" (-32602), whoever owns it. Every request is audited like a tool
 * call: one event with the method, the token, the client, the task id, the outcome and the task's
 * status. `tasks/cancel` of a request nobody has decided withdraws it (its event commits with the
 * withdrawal and names the approval, so the approver's story shows it); of a decided one it does
 * nothing (2026-07-28 acknowledges, as cancellation there is cooperative; 2025-11-25 refuses,
 * since an approved action runs exactly once). A server without gated tools runs no tasks and
 * answers every task method -32601, audited too.
 */
export function registerTaskHandlers(server: TaskAwareServer, options: TaskHandlerOptions): void {
  for (const method of TASK_METHODS)
    server.setRequestHandler(method, { params: ANY_PARAMS }, (params, ctx) =>
      traceMcpRequest(server, { method, meta: (params as { _meta?: unknown })._meta, ctx }, () =>
        answerTaskRequest(server, options, method, params as Record<string, unknown>, ctx),
      ),
    );
}

/** What a method's body gets. */
interface RunInput {
  kit: CallKit;
  params: Record<string, unknown>;
  ctx: ServerContext;
  wire: TaskWire;
  owner: TaskOwner;
  /** Where the request's one event is written (a withdrawal writes it with its effect). */
  sink: EventSink;
  resultWaits: ResultWaits | undefined;
  event: (
    outcome: Outcome,
    summary: Record<string, unknown>,
    approval?: ApprovalRecord,
    withApproval?: boolean,
  ) => AuditEventInput;
}

/** The body of each task method. */
const RUN: Record<TaskMethod, (input: RunInput) => Promise<Answer>> = {
  'tasks/get': taskGet,
  'tasks/result': taskResult,
  'tasks/list': taskList,
  'tasks/cancel': taskCancel,
  'tasks/update': taskUpdate,
};

/**
 * One task request: claims its event, checks that the method is served on this wire and asked for
 * properly, runs its body, and writes the event (unless the body wrote it with its effect). A
 * refusal goes out even while the database is away, its event held; an answer only once its event
 * is committed.
 */
async function answerTaskRequest(
  server: TaskAwareServer,
  options: TaskHandlerOptions,
  method: TaskMethod,
  params: Record<string, unknown>,
  ctx: ServerContext,
): Promise<Result> {
  const { kit } = options;
  const started = performance.now();
  const audit = options.audit();
  const access = await options.who(audit);
  // The request's event names the token it came with.
  audit.identify(access);
  const sink = audit.claim();
  const requestId = audit.requestId;
  const client = options.client(ctx);
  const id = typeof params.taskId === 'string' ? params.taskId.slice(0, MAX_TASK_ID) : undefined;
  const event: RunInput['event'] = (outcome, summary, a, withApproval = false) =>
    audit.event({
      method,
      client,
      tool: a?.tool ?? null,
      arguments:
        id !== undefined
          ? { taskId: id }
          : typeof params.cursor === 'string'
            ? { cursor: params.cursor }
            : {},
      outcome,
      since: started,
      resultSummary: summary,
      // Polls stay out of the approval's story (a waiting client polls hundreds of times);
      // a withdrawal, or an attempt at one, is part of it.
      ...(withApproval && a ? { approvalId: a.id } : {}),
    });
  const wire = server.wire();
  const owner: TaskOwner = { server: kit.server, tokenId: access.tokenId, customerId: access.customerId };
  try {
    refuseUnserved(options, method, wire, ctx);
    const input = { kit, params, ctx, wire, owner, sink, resultWaits: options.resultWaits, event };
    const answer = await RUN[method](input);
    if (!answer.recorded)
      await recordAnswer(kit, sink, {
        ...event(answer.outcome, answer.summary, answer.approval, method === 'tasks/cancel'),
        // One id for both attempts: if the first committed though its answer was lost, the second is not stored twice.
        id: randomUUID(),
      });
    return answer.result;
  } catch (err) {
    if (err instanceof ProtocolError) throw err;
    const refusal = asRefusal(kit, err, method, requestId);
    await sink
      .keep(
        event(
          refusal.outcome,
          { ...refusal.summary, ...(id && err instanceof TaskRefusal ? { task_id: id } : {}) },
          refusal.approval,
          method === 'tasks/cancel',
        ),
      )
      .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
    throw refusal.error;
  }
}

/** Throws the refusal of a method this server or wire does not serve, or asked for without the tasks extension. */
function refuseUnserved(options: TaskHandlerOptions, method: TaskMethod, wire: TaskWire, ctx: ServerContext) {
  if (!options.runsTasks || !ON_WIRE[wire].has(method))
    throw new TaskRefusal(
      new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        options.runsTasks
          ? `Method not found: ${method} is not part of protocol revision ${wire}.`
          : `Method not found: ${options.kit.server} runs no tasks (it has no gated tool).`,
      ),
      'bad_request',
      { reason: 'unsupported_method' },
    );
  if (wire === '2026-07-28' && !declaresTasks(ctx)) {
    const error = new MissingRequiredClientCapabilityError({
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    });
    throw new TaskRefusal(error, 'bad_request', { reason: 'missing_capability' });
  }
}

/** Commits an answer's event; like a read tool's result, a task's state goes out only once it is. */
async function recordAnswer(kit: CallKit, sink: EventSink, done: AuditEventInput): Promise<void> {
  try {
    await sink.append(done);
  } catch (err) {
    kit.logger.error(
      { err, requestId: done.requestId },
      'audit event could not be written; the answer is withheld',
    );
    const text =
      'The audit log could not record this request, so its answer is withheld. Nothing was changed; try again in a few seconds.';
    if (isConnectionError(err))
      await sink
        .keep({ ...done, outcome: 'unavailable', resultSummary: { error: text, withheld: done.outcome } })
        .catch(() => {});
    throw new ProtocolError(ProtocolErrorCode.InternalError, text);
  }
}

/** What a failed task request answers and records: its own refusal, an unreachable database, or an internal error. */
function asRefusal(kit: CallKit, err: unknown, method: TaskMethod, requestId: string): TaskRefusal {
  if (err instanceof TaskRefusal) return err;
  if (isConnectionError(err)) {
    kit.logger.warn({ err, requestId, method }, 'database unavailable');
    const text = `${method} could not reach the database. Nothing was changed; try again in a few seconds.`;
    return new TaskRefusal(new ProtocolError(ProtocolErrorCode.InternalError, text), 'unavailable', {
      error: text,
    });
  }
  const { incident, text } = internalError();
  kit.logger.error({ err, incident, requestId, method }, 'task request failed');
  return new TaskRefusal(new ProtocolError(ProtocolErrorCode.InternalError, text), 'internal_error', {
    incident,
  });
}

/** The task the request names, owned by its token; "not found" for any other. */
async function found(method: string, input: RunInput): Promise<ApprovalRecord> {
  const id = taskIdOf(method, input.params);
  const a = await findTask(input.kit.sql, input.owner, id);
  if (!a) throw notFound(id, input.kit.server);
  return a;
}

/** A place for one open `tasks/result` wait; past a cap, a refusal that says to poll instead. */
function enterWait(input: RunInput, approval: ApprovalRecord): (() => void) | undefined {
  const waits = input.resultWaits;
  if (!waits) return undefined;
  const place = waits.enter(input.owner.tokenId);
  if (place.ok) return place.release;
  const { perToken, total } = waits.limits;
  const cap =
    place.full === 'token'
      ? `this token already holds ${perToken} open tasks/result requests`
      : `this server already holds ${total} open tasks/result requests`;
  throw new TaskRefusal(
    new ProtocolError(
      RESULT_WAITS_FULL,
      `Task ${approval.id} is still ${taskState(approval, input.wire).status}, and ${cap}. Poll tasks/get for its status (every few seconds) and ask tasks/result once it is completed, failed or cancelled.`,
      { taskId: approval.id, retryWith: 'tasks/get' },
    ),
    'rate_limited',
    { reason: 'result_waits', full: place.full, ...summaryOf(approval, input.wire) },
  );
}

function summaryOf(approval: ApprovalRecord, wire: TaskWire) {
  return { task_status: taskState(approval, wire).status, approval_status: approval.status };
}

async function taskGet(input: RunInput): Promise<Answer> {
  const a = await found('tasks/get', input);
  return {
    result: getTaskResult(a, input.wire),
    outcome: 'ok',
    summary: summaryOf(a, input.wire),
    approval: a,
  };
}

async function taskResult(input: RunInput): Promise<Answer> {
  let a = await found('tasks/result', input);
  // 2025-11-25: the answer waits until the task is final (the client may go away meanwhile), in
  // one of the few places a token and the process have for waits.
  const place = taskState(a, input.wire).final ? undefined : enterWait(input, a);
  try {
    for (let pause = 250; !taskState(a, input.wire).final; pause = Math.min(pause * 2, 2000)) {
      await sleep(pause, undefined, { signal: input.ctx.mcpReq.signal }).catch(() => {
        throw new TaskRefusal(
          new ProtocolError(ProtocolErrorCode.InternalError, 'The request was cancelled.'),
          'cancelled',
          { reason: 'client_went_away' },
        );
      });
      a = (await findTask(input.kit.sql, input.owner, a.id)) ?? a;
    }
  } finally {
    place?.();
  }
  const state = taskState(a, input.wire);
  return {
    result: { ...state.result!, _meta: { [RELATED_TASK]: { taskId: a.id } } },
    outcome: 'ok',
    summary: { ...summaryOf(a, input.wire), is_error: state.result!.isError === true },
    approval: a,
  };
}

async function taskList(input: RunInput): Promise<Answer> {
  const cursor = input.params.cursor;
  if (cursor !== undefined && typeof cursor !== 'string') throw invalid('tasks/list: cursor is a string.');
  let after: string | undefined;
  if (typeof cursor === 'string') {
    after = Buffer.from(cursor, 'base64url').toString('utf8');
    if (!after) throw invalid('tasks/list: the cursor is not one this server gave.');
  }
  const page = await listTasks(input.kit.sql, input.owner, after);
  if (!page) throw invalid('tasks/list: the cursor is not one this server gave.');
  return {
    result: {
      tasks: page.tasks.map((a) => wireTask(taskState(a, input.wire), input.wire)),
      ...(page.next ? { nextCursor: Buffer.from(page.next, 'utf8').toString('base64url') } : {}),
    },
    outcome: 'ok',
    summary: { tasks_count: page.tasks.length, truncated: page.next !== undefined },
  };
}

async function taskCancel(input: RunInput): Promise<Answer> {
  const id = taskIdOf('tasks/cancel', input.params);
  const done = await withdrawTask(input.kit.sql, input.sink, input.owner, id, (w) =>
    input.event('withdrawn', { ...summaryOf(w, input.wire), withdrawn: true }, w, true),
  );
  if (!done) throw notFound(id, input.kit.server);
  const a = done.record;
  const state = taskState(a, input.wire);
  const summary = { ...summaryOf(a, input.wire), withdrawn: done.withdrawn };
  if (done.withdrawn)
    return {
      result: input.wire === '2026-07-28' ? {} : wireTask(state, input.wire),
      outcome: 'withdrawn',
      summary,
      approval: a,
      recorded: true,
    };
  // 2026-07-28: cancellation is cooperative and acknowledged whatever happens; the task goes on.
  if (input.wire === '2026-07-28') return { result: {}, outcome: 'ok', summary, approval: a };
  const text = state.final
    ? `Cannot cancel task ${a.id}: already in terminal status '${state.status}'.`
    : `Cannot cancel task ${a.id}: ${a.decidedBy ?? 'an approver'} approved it and it runs now, exactly once; its result follows.`;
  throw new TaskRefusal(
    new ProtocolError(ProtocolErrorCode.InvalidParams, text),
    'forbidden',
    { ...summary, reason: state.final ? 'final' : 'decided' },
    a,
  );
}

async function taskUpdate(input: RunInput): Promise<Answer> {
  const a = await found('tasks/update', input);
  // A Bulkhead task never waits for input from the client (a person decides it elsewhere), so
  // no response is outstanding and any sent is ignored, as the extension asks.
  const responses = input.params.inputResponses;
  const ignored =
    responses && typeof responses === 'object' && !Array.isArray(responses)
      ? Object.keys(responses).length
      : 0;
  return {
    result: {},
    outcome: 'ok',
    summary: { ...summaryOf(a, input.wire), input_responses_ignored: ignored },
    approval: a,
  };
}
