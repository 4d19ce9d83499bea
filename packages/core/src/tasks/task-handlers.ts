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
import type { Access } from '../access.ts';
import type { ApprovalRecord } from '../approvals/store.ts';
import type { CallKit } from '../call-tool.ts';
import type { KitServer } from './task-server.ts';
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
  /** The caller, from its token (resolved again per request on stdio). */
  who: () => Promise<Access>;
  requestId: () => string;
  /** Told when a request enters a handler that writes its own audit event. */
  onAudited?: (() => void) | undefined;
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
export function registerTaskHandlers(server: KitServer, options: TaskHandlerOptions): void {
  const { kit } = options;

  const handle = (method: TaskMethod, run: (input: RunInput) => Promise<Answer>) => {
    server.setRequestHandler(method, { params: ANY_PARAMS }, async (params, ctx) => {
      const started = performance.now();
      const access = await options.who();
      options.onAudited?.();
      const requestId = options.requestId();
      const client = options.client(ctx);
      const p = params as Record<string, unknown>;
      const id = typeof p.taskId === 'string' ? p.taskId.slice(0, MAX_TASK_ID) : undefined;
      const event = (
        outcome: Outcome,
        summary: Record<string, unknown>,
        a?: ApprovalRecord,
        withApproval = false,
      ): AuditEventInput => ({
        server: kit.server,
        method,
        requestId,
        tokenId: access.tokenId,
        tokenLabel: access.label,
        clientName: client.name,
        clientVersion: client.version,
        tool: a?.tool ?? null,
        arguments:
          id !== undefined ? { taskId: id } : typeof p.cursor === 'string' ? { cursor: p.cursor } : {},
        outcome,
        durationMs: performance.now() - started,
        resultSummary: summary,
        // Polls stay out of the approval's story (a waiting client polls hundreds of times);
        // a withdrawal, or an attempt at one, is part of it.
        ...(withApproval && a ? { approvalId: a.id } : {}),
      });
      const wire = server.wire();
      const owner: TaskOwner = {
        server: kit.server,
        tokenId: access.tokenId,
        customerId: access.customerId,
      };
      try {
        if (!options.runsTasks || !ON_WIRE[wire].has(method))
          throw new TaskRefusal(
            new ProtocolError(
              ProtocolErrorCode.MethodNotFound,
              options.runsTasks
                ? `Method not found: ${method} is not part of protocol revision ${wire}.`
                : `Method not found: ${kit.server} runs no tasks (it has no gated tool).`,
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
        const answer = await run({ params: p, ctx, wire, owner, event });
        if (!answer.recorded) {
          // One id for both attempts: if the first committed though its answer was lost, the second is not stored twice.
          const done = {
            ...event(answer.outcome, answer.summary, answer.approval, method === 'tasks/cancel'),
            id: randomUUID(),
          };
          try {
            await kit.audit.append(done);
          } catch (err) {
            // Like a read tool's result, a task's state goes out only once its event is committed.
            kit.logger.error({ err, requestId }, 'audit event could not be written; the answer is withheld');
            const text =
              'The audit log could not record this request, so its answer is withheld. Nothing was changed; try again in a few seconds.';
            if (isConnectionError(err))
              await kit.audit
                .keep({
                  ...done,
                  outcome: 'unavailable',
                  resultSummary: { error: text, withheld: done.outcome },
                })
                .catch(() => {});
            throw new ProtocolError(ProtocolErrorCode.InternalError, text);
          }
        }
        return answer.result;
      } catch (err) {
        if (err instanceof ProtocolError) throw err;
        if (err instanceof TaskRefusal) {
          // A refusal discloses nothing: it goes out even while the database is away, its event held.
          await kit.audit
            .keep(
              event(
                err.outcome,
                { ...err.summary, ...(id ? { task_id: id } : {}) },
                err.approval,
                method === 'tasks/cancel',
              ),
            )
            .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
          throw err.error;
        }
        if (isConnectionError(err)) {
          kit.logger.warn({ err, requestId, method }, 'database unavailable');
          const text = `${method} could not reach the database. Nothing was changed; try again in a few seconds.`;
          await kit.audit
            .keep(event('unavailable', { error: text }))
            .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
          throw new ProtocolError(ProtocolErrorCode.InternalError, text);
        }
        const incident = randomUUID().slice(0, 8);
        kit.logger.error({ err, incident, requestId, method }, 'task request failed');
        await kit.audit
          .keep(event('internal_error', { incident }))
          .catch((e: unknown) => kit.logger.error({ err: e }, 'audit event could not be written'));
        throw new ProtocolError(ProtocolErrorCode.InternalError, `Internal error, incident ${incident}.`);
      }
    });
  };

  const found = async (method: string, input: RunInput): Promise<ApprovalRecord> => {
    const id = taskIdOf(method, input.params);
    const a = await findTask(kit.sql, input.owner, id);
    if (!a) throw notFound(id, kit.server);
    return a;
  };
  /** A place for one open `tasks/result` wait; past a cap, a refusal that says to poll instead. */
  const enterWait = (tokenId: string, a: ApprovalRecord, wire: TaskWire): (() => void) | undefined => {
    const waits = options.resultWaits;
    if (!waits) return undefined;
    const place = waits.enter(tokenId);
    if (place.ok) return place.release;
    const { perToken, total } = waits.limits;
    const cap =
      place.full === 'token'
        ? `this token already holds ${perToken} open tasks/result requests`
        : `this server already holds ${total} open tasks/result requests`;
    throw new TaskRefusal(
      new ProtocolError(
        RESULT_WAITS_FULL,
        `Task ${a.id} is still ${taskState(a, wire).status}, and ${cap}. Poll tasks/get for its status (every few seconds) and ask tasks/result once it is completed, failed or cancelled.`,
        { taskId: a.id, retryWith: 'tasks/get' },
      ),
      'rate_limited',
      { reason: 'result_waits', full: place.full, ...summaryOf(a, wire) },
    );
  };
  const summaryOf = (a: ApprovalRecord, wire: TaskWire) => ({
    task_status: taskState(a, wire).status,
    approval_status: a.status,
  });

  handle('tasks/get', async (input) => {
    const a = await found('tasks/get', input);
    return {
      result: getTaskResult(a, input.wire),
      outcome: 'ok',
      summary: summaryOf(a, input.wire),
      approval: a,
    };
  });

  handle('tasks/result', async (input) => {
    let a = await found('tasks/result', input);
    // 2025-11-25: the answer waits until the task is final (the client may go away meanwhile), in
    // one of the few places a token and the process have for waits.
    const place = taskState(a, input.wire).final ? undefined : enterWait(input.owner.tokenId, a, input.wire);
    try {
      for (let pause = 250; !taskState(a, input.wire).final; pause = Math.min(pause * 2, 2000)) {
        await sleep(pause, undefined, { signal: input.ctx.mcpReq.signal }).catch(() => {
          throw new TaskRefusal(
            new ProtocolError(ProtocolErrorCode.InternalError, 'The request was cancelled.'),
            'cancelled',
            { reason: 'client_went_away' },
          );
        });
        a = (await findTask(kit.sql, input.owner, a.id)) ?? a;
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
  });

  handle('tasks/list', async (input) => {
    const cursor = input.params.cursor;
    if (cursor !== undefined && typeof cursor !== 'string') throw invalid('tasks/list: cursor is a string.');
    let after: string | undefined;
    if (typeof cursor === 'string') {
      after = Buffer.from(cursor, 'base64url').toString('utf8');
      if (!after) throw invalid('tasks/list: the cursor is not one this server gave.');
    }
    const page = await listTasks(kit.sql, input.owner, after);
    if (!page) throw invalid('tasks/list: the cursor is not one this server gave.');
    return {
      result: {
        tasks: page.tasks.map((a) => wireTask(taskState(a, input.wire), input.wire)),
        ...(page.next ? { nextCursor: Buffer.from(page.next, 'utf8').toString('base64url') } : {}),
      },
      outcome: 'ok',
      summary: { tasks_count: page.tasks.length, truncated: page.next !== undefined },
    };
  });

  handle('tasks/cancel', async (input) => {
    const id = taskIdOf('tasks/cancel', input.params);
    const done = await withdrawTask(kit.sql, kit.audit, input.owner, id, (w) =>
      input.event('withdrawn', { ...summaryOf(w, input.wire), withdrawn: true }, w, true),
    );
    if (!done) throw notFound(id, kit.server);
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
  });

  handle('tasks/update', async (input) => {
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
  });
}

/** What a method's body gets. */
interface RunInput {
  params: Record<string, unknown>;
  ctx: ServerContext;
  wire: TaskWire;
  owner: TaskOwner;
  event: (
    outcome: Outcome,
    summary: Record<string, unknown>,
    a?: ApprovalRecord,
    withApproval?: boolean,
  ) => AuditEventInput;
}
