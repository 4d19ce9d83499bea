import type { CallToolResult } from '@modelcontextprotocol/server';
import { isConnectionError } from '@bulkhead/db';
import { renderText } from '../text-safety/untrusted/render.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { internalError } from '../tool-definition/errors.ts';
import { UpstreamError } from '../upstream/client.ts';
import type { CallRequest } from './call-tool.ts';
import { errorResult, NOTHING_CHANGED, type CallRecord } from './record-call.ts';
import { classifyFailure } from './run-handler.ts';
import { CommitUnconfirmed } from './write-transaction.ts';

/** What a call that failed answers, and records: a timeout, a cancellation, a refusal, or an internal error. */
export function answerFailure(
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
