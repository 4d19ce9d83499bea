import type { Outcome } from '@bulkhead/audit';
import { ToolError } from '../tool-definition/errors.ts';

/** A request the kit refused or an upstream that failed, as a sentence naming the system; the call answers `isError`. */
export class UpstreamError extends ToolError {
  constructor(
    message: string,
    /** `unavailable` for a system that is down or too slow, `tool_error` for a refusal by the kit. */
    readonly outcome: Extract<Outcome, 'unavailable' | 'tool_error'>,
    /** The upstream's status, when it answered. */
    readonly statusCode?: number,
  ) {
    super(message);
  }
}
