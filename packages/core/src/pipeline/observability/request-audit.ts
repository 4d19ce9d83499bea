import type { AuditEventInput, AuditWriter } from '@bulkhead/audit';
import { activeSpan, activeTraceId, inSpan, markError } from './tracing.ts';

/** How the one message that promised an event writes it: the audit writer's three ways, nothing else. */
export type EventSink = Pick<AuditWriter, 'append' | 'appendIn' | 'keep'>;

/**
 * The owner of a request's audit event. Made where the request enters (the HTTP app's request
 * context; on stdio, each message as its handler takes it) and passed explicitly to whatever answers
 * it, so that every path a request takes ends in exactly one event:
 *
 * - a message that answers for itself (a tool call, a task method, a message that is not served)
 *   `claim`s the event and writes it with the sink it gets back, when it knows its outcome;
 * - a request turned away before any message claimed one (a refusal, the MCP layer's own rejection,
 *   an internal error) is written by `settle`, which writes nothing once an event is claimed;
 * - a refusal counted into a per-minute summary instead of an event of its own is `waive`d.
 *
 * A 2025-03-26 batch is one request of several messages: each served message claims its own event.
 */
export interface RequestAudit {
  readonly requestId: string;
  /** Events claimed or settled so far (0 or 1, except in a batch). */
  readonly events: number;
  /** Promises this message's event; the sink writes it (one id per event, so a retried write is stored once). */
  claim(): EventSink;
  /** Writes the request's own event unless one is claimed, settled or waived already. */
  settle(event: () => AuditEventInput): Promise<void>;
  /** The request's refusal is counted in a summary event (`refusal-log.ts`), not written on its own. */
  waive(): void;
}

/** A request's audit owner, writing with `writer` (the server's, counted on `/metrics`). */
export function createRequestAudit(writer: EventSink, requestId: string): RequestAudit {
  let events = 0;
  let waived = false;
  return {
    requestId,
    get events() {
      return events;
    },
    claim() {
      events++;
      return tracedSink(writer);
    },
    async settle(event) {
      if (events > 0 || waived) return;
      events++;
      await tracedSink(writer).keep(event());
    },
    waive() {
      waived = true;
    },
  };
}

const UNMARKED = new Set(['ok', 'pending_approval', 'approved', 'executed']);

/**
 * `writer` as a traced request writes with it: each event carries the trace id of the span that
 * claimed it (the request's server span), a failed outcome marks that span's `error.type`, and each
 * write is an `audit append` span. Untraced, the writer itself.
 */
export function tracedSink(writer: EventSink): EventSink {
  // A trace the client did not sample is still named in the event (its spans are not exported).
  const traceId = activeTraceId();
  if (!traceId) return writer;
  const owner = activeSpan();
  const stamp = (e: AuditEventInput): AuditEventInput => {
    if (!UNMARKED.has(e.outcome)) markError(owner, e.outcome);
    return { ...e, traceId: e.traceId ?? traceId };
  };
  const span = <T>(e: AuditEventInput, fn: (e: AuditEventInput) => Promise<T>) =>
    inSpan('audit append', { attributes: { 'bulkhead.audit.outcome': e.outcome } }, () => fn(stamp(e)));
  return {
    append: (e) => span(e, (s) => writer.append(s)),
    appendIn: (tx, e) => span(e, (s) => writer.appendIn(tx, s)),
    keep: (e) => span(e, (s) => writer.keep(s)),
  };
}
