import type { CallToolResult } from '@modelcontextprotocol/server';
import { effectiveStatus, type ApprovalRecord } from '../approvals/store.ts';
import { scanUntrusted } from '../pipeline/text-safety/untrusted/detect.ts';
import { renderText } from '../pipeline/text-safety/untrusted/render.ts';

/** The tasks extension of 2026-07-28 (SEP-2663), as clients and servers name it in their capabilities. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The `_meta` key that ties a 2025-11-25 `tasks/result` to its task. */
export const RELATED_TASK = 'io.modelcontextprotocol/related-task';

/** The `_meta` key of a 2025-11-25 `CreateTaskResult` with the sentence a host may pass to the model at once. */
export const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';

/**
 * Which wire a task request speaks: the experimental tasks of 2025-11-25 (`task` in the call's
 * params, `ttl`, `pollInterval`, `tasks/result`, `tasks/list`) or the tasks extension of 2026-07-28
 * (server-directed, `resultType: "task"`, `ttlMs`, `pollIntervalMs`, the result inlined in
 * `tasks/get`, `tasks/update`, no listing).
 */
export type TaskWire = '2025-11-25' | '2026-07-28';

/** The statuses a Bulkhead task takes (never `input_required`: an approver decides out of band). */
export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

/** A task as it stands, independent of the wire. */
export interface TaskState {
  taskId: string;
  status: TaskStatus;
  statusMessage: string;
  createdAt: Date;
  lastUpdatedAt: Date;
  /** Suggested polling interval while the task is not final. */
  pollMs: number | undefined;
  /** True for completed, failed and cancelled. */
  final: boolean;
  /** What the call would have answered, once final: the tool's own result, or an `isError` sentence. */
  result: CallToolResult | undefined;
}

/** While a person has not decided: seconds would be wasted on a decision that takes minutes. */
export const WAITING_POLL_MS = 5_000;
/** Once approved: the owning server runs it within a second. */
export const RUNNING_POLL_MS = 1_000;

function iso(d: Date): string {
  return d.toISOString();
}

function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/**
 * The stored result of an approved run as the tool call would have answered it: the text
 * rendering every client reads (untrusted text delimited, as in any result) and, for an object,
 * the value itself as `structuredContent`. The same stored row always gives the same answer.
 */
export function executedResult(stored: unknown): CallToolResult {
  const { value } = scanUntrusted(stored);
  const text = typeof value === 'string' ? value : renderText(value);
  const result: CallToolResult = { content: [{ type: 'text', text }] };
  if (value && typeof value === 'object' && !Array.isArray(value))
    result.structuredContent = value as Record<string, unknown>;
  return result;
}

/**
 * Where the task of approval `a` stands, in words for the client (and possibly the model):
 *
 * | approval            | task (2025-11-25)          | task (2026-07-28)            |
 * |---------------------|----------------------------|------------------------------|
 * | pending             | working (waiting)          | working (waiting)            |
 * | approved            | working (running)          | working (running)            |
 * | executed            | completed, the tool result | completed, the tool result   |
 * | failed              | failed, `isError` result   | completed, `isError` result  |
 * | rejected            | cancelled, with the reason | cancelled, with the reason   |
 * | expired, withdrawn  | cancelled                  | cancelled                    |
 *
 * A request that never ran ends `cancelled` on both wires. One that ran and failed is `failed` on
 * 2025-11-25, which counts a tool error as a failure, and `completed` with `isError: true` on
 * 2026-07-28, which keeps `failed` for JSON-RPC errors only.
 */
export function taskState(approval: ApprovalRecord, wire: TaskWire, now = new Date()): TaskState {
  const base = { taskId: approval.id, createdAt: approval.requestedAt };
  const by = approval.decidedBy ?? 'an approver';
  switch (effectiveStatus(approval, now)) {
    case 'pending':
      return {
        ...base,
        status: 'working',
        statusMessage: `Waiting for a person to approve ${approval.tool} (approval ${approval.id}); nothing has been done yet. Undecided, it lapses at ${iso(approval.expiresAt)}.`,
        lastUpdatedAt: approval.requestedAt,
        pollMs: WAITING_POLL_MS,
        final: false,
        result: undefined,
      };
    case 'approved':
      return {
        ...base,
        status: 'working',
        statusMessage: `Approved by ${by}; ${approval.tool} runs now, exactly once.`,
        lastUpdatedAt: approval.decidedAt ?? approval.requestedAt,
        pollMs: RUNNING_POLL_MS,
        final: false,
        result: undefined,
      };
    case 'executed':
      return {
        ...base,
        status: 'completed',
        statusMessage: `Approved by ${by} and carried out.`,
        lastUpdatedAt: approval.executedAt ?? approval.decidedAt ?? approval.requestedAt,
        pollMs: undefined,
        final: true,
        result: executedResult(approval.result),
      };
    case 'failed': {
      const error = approval.error ?? 'it did not complete';
      return {
        ...base,
        status: wire === '2025-11-25' ? 'failed' : 'completed',
        statusMessage: `Approved by ${by}, but it did not complete: ${error}`,
        lastUpdatedAt: approval.executedAt ?? approval.decidedAt ?? approval.requestedAt,
        pollMs: undefined,
        final: true,
        result: errorResult(error),
      };
    }
    case 'rejected': {
      const text = `Rejected by ${by}; nothing was done and it will never run.${approval.decisionReason ? ` Reason: ${approval.decisionReason}` : ''}`;
      return {
        ...base,
        status: 'cancelled',
        statusMessage: text,
        lastUpdatedAt: approval.decidedAt ?? approval.requestedAt,
        pollMs: undefined,
        final: true,
        result: errorResult(text),
      };
    }
    case 'expired': {
      const text = `Nobody decided before ${iso(approval.expiresAt)}; nothing was done and it will never run.`;
      return {
        ...base,
        status: 'cancelled',
        statusMessage: text,
        lastUpdatedAt: approval.expiresAt,
        pollMs: undefined,
        final: true,
        result: errorResult(text),
      };
    }
    case 'withdrawn': {
      const text = 'Withdrawn by the client before anyone decided; nothing was done and it will never run.';
      return {
        ...base,
        status: 'cancelled',
        statusMessage: text,
        lastUpdatedAt: approval.withdrawnAt ?? approval.requestedAt,
        pollMs: undefined,
        final: true,
        result: errorResult(text),
      };
    }
  }
}

/**
 * The task on the wire, without a payload: `ttl`/`pollInterval` (2025-11-25) or
 * `ttlMs`/`pollIntervalMs` (2026-07-28). The time to live is null, unlimited: an approval
 * and its result are kept as long as the approval itself, so a client polling after a week
 * finds what it left.
 */
export function wireTask(state: TaskState, wire: TaskWire): Record<string, unknown> {
  const task: Record<string, unknown> = {
    taskId: state.taskId,
    status: state.status,
    statusMessage: state.statusMessage,
    createdAt: iso(state.createdAt),
    lastUpdatedAt: iso(state.lastUpdatedAt),
  };
  if (wire === '2025-11-25') {
    task.ttl = null;
    if (state.pollMs !== undefined) task.pollInterval = state.pollMs;
  } else {
    task.ttlMs = null;
    if (state.pollMs !== undefined) task.pollIntervalMs = state.pollMs;
  }
  return task;
}

/** The sentence a 2025-11-25 host may give the model while the task waits (the call did nothing yet). */
export function immediateResponse(approval: ApprovalRecord): string {
  return `Nothing has been done yet: a person must approve this ${approval.tool} request first (approval ${approval.id}, lapsing undecided at ${iso(approval.expiresAt)}). Its result arrives with task ${approval.id}.`;
}

/** The answer to a gated `tools/call` made as a task: the task just created, in the wire's shape. */
export function createTaskResult(approval: ApprovalRecord, wire: TaskWire): Record<string, unknown> {
  const task = wireTask(taskState(approval, wire), wire);
  if (wire === '2026-07-28') return { resultType: 'task', ...task };
  return { task, _meta: { [MODEL_IMMEDIATE_RESPONSE]: immediateResponse(approval) } };
}

/**
 * The answer to `tasks/get`: the task, and on 2026-07-28 its payload inlined — a completed task
 * carries the tool call's result (a failed one would carry its JSON-RPC error; Bulkhead's never
 * fail that way).
 */
export function getTaskResult(approval: ApprovalRecord, wire: TaskWire): Record<string, unknown> {
  const state = taskState(approval, wire);
  const task = wireTask(state, wire);
  if (wire === '2026-07-28' && state.status === 'completed' && state.result) task.result = state.result;
  return task;
}
