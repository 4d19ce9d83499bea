import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { AuditEventInput, Outcome } from '@bulkhead/audit';
import { isConnectionError } from '@bulkhead/db';
import type { Logger } from 'pino';
import { lazyChild } from '../observability/logger.ts';
import type { ClientInfo, EventDraft, EventSink } from '../observability/request-audit.ts';
import { redactArguments } from '../text-safety/secret.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import type { UpstreamRecord } from '../upstream/upstreams.ts';
import { argumentsOverLimit, type OverLimit } from './argument-limits.ts';
import type { CallKit, CallRequest } from './call-tool.ts';
import { DEFAULT_TIMEOUT_MS, waitAtMost } from './time-limit.ts';

/** What a call's internal error adds to the sentence every path says. */
export const NOTHING_CHANGED =
  ". Nothing was changed. The details are in the server's log under that id; retrying may not help.";

/** A refusal or failure as the client gets it: one sentence, marked as an error. */
export function errorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

const WITHHELD =
  'The audit log could not record this call, so its result is withheld. Nothing was changed; try again in a moment, and if it persists, tell the operator.';

/** One call's audit event in the making, and how it is written and its answer released. */
export interface CallRecord {
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

/** The client a call's event names, as the request carries it. */
export function clientOf(req: CallRequest): ClientInfo {
  return { name: req.clientName ?? null, version: req.clientVersion ?? null };
}

export function recordCall(
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
  const client = clientOf(req);
  // An unknown tool's arguments are not recorded: which of them are secret is unknown; oversized ones neither.
  const recorded = tool && !oversized ? redactArguments(tool.input, req.arguments) : null;
  const upstreamCalls: UpstreamRecord[] = [];
  const limit = { timeoutMs: DEFAULT_TIMEOUT_MS, deadline: Number.POSITIVE_INFINITY };
  const rec: CallRecord = {
    sink,
    requestId,
    logger,
    oversized,
    upstreamCalls,
    limit,
    // Its own fields first: an object that starts with a spread and gains fields after it leaves V8's
    // fast path (about 2 µs an object on Node 20).
    event: (outcome, extra = {}) =>
      req.audit.event({
        method: 'tools/call',
        client,
        tool: name,
        arguments: recorded,
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
      // The id leads the copy (and is set again, over an `id: undefined` the spread brings): a copy of the
      // event that gains a field after its own leaves V8's fast path, about 2.5 µs a call.
      const id = given.id ?? randomUUID();
      const done = { id, ...given };
      done.id = id;
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
