import { randomUUID } from 'node:crypto';
import { SUCCESSFUL_OUTCOMES, type AuditEventInput, type AuditWriter, type Outcome } from '@bulkhead/audit';
import { activeSpan, activeTraceId, inSpan, markError } from './tracing.ts';

/** How the one message that promised an event writes it: the audit writer's three ways, nothing else. */
export type EventSink = Pick<AuditWriter, 'append' | 'appendIn' | 'keep'>;

/** Who an event names: a token's id and label (either may be unknown). */
export interface Party {
  tokenId: string | null;
  label: string | null;
}

/** What a client says it is (its `clientInfo`, or a browser's user agent). */
export interface ClientInfo {
  name: string | null;
  version: string | null;
}

/** The fields of an event that its owner fills in; whoever writes the event never spells them out. */
type OwnedFields =
  'server' | 'requestId' | 'tokenId' | 'tokenLabel' | 'clientName' | 'clientVersion' | 'durationMs';

/** What the writer of an event says of it: the method, the outcome and what is particular to this event. */
export type EventDraft = Omit<AuditEventInput, OwnedFields> & {
  /** The event names this party instead of the request's caller (an approval's requester or decider). */
  by?: Party | undefined;
  /** The client of this message, when it said so (MCP: per message; the console: the browser). */
  client?: ClientInfo | undefined;
  /** When the timed part began (`performance.now()`): the owner's start when absent. */
  since?: number | undefined;
  /** A duration measured elsewhere (an approved action's run), instead of the time since `since`. */
  durationMs?: number | undefined;
};

/**
 * The owner of the events one request (or one operator action) writes: it knows the server, the
 * request's id, when it started and, once told, who made it and with what client, and builds every
 * event of the request from a draft, so that no writer spells out those fields by hand.
 */
export interface EventOwner {
  readonly server: string;
  readonly requestId: string;
  /** The request's caller, once its token is known (a genuine token that was refused included). */
  identify(by: Party): void;
  /** The event `draft` describes, completed with what the owner knows. */
  event(draft: EventDraft): AuditEventInput;
}

/** What an owner knows from the start. */
export interface EventOwnerOptions {
  /** The server the events are about (the writing deployable's, or the switched tool's). */
  server: string;
  /** The request's id; a fresh one for an action that is no request of its own. */
  requestId?: string | undefined;
  /** `performance.now()` when the request arrived (default: now). */
  started?: number | undefined;
  /** Who the events name until `identify` says otherwise (default: no token). */
  by?: Party | undefined;
  /** The client every event names unless its draft says another (default: none). */
  client?: ClientInfo | undefined;
}

/** An owner of events that is not (yet) bound to a writer: see {@link EventOwner}. */
export function createEventOwner(options: EventOwnerOptions): EventOwner {
  const started = options.started ?? performance.now();
  const requestId = options.requestId ?? randomUUID();
  let caller: Party = options.by ?? { tokenId: null, label: null };
  return {
    server: options.server,
    requestId,
    identify(by) {
      caller = { tokenId: by.tokenId, label: by.label };
    },
    event({ by, client, since, durationMs, ...draft }) {
      const who = by ?? caller;
      const from = client ?? options.client;
      return {
        server: options.server,
        requestId,
        tokenId: who.tokenId,
        tokenLabel: who.label,
        clientName: from?.name ?? null,
        clientVersion: from?.version ?? null,
        ...draft,
        durationMs: durationMs ?? performance.now() - (since ?? started),
      };
    },
  };
}

/**
 * The owner of a request's audit event. Made where the request enters (the HTTP app's request
 * context; on stdio, each message as its handler takes it) and passed explicitly to whatever answers
 * it, so that every path a request takes ends in exactly one event, built by the owner from a draft
 * (`event`):
 *
 * - a message that answers for itself (a tool call, a task method, a message that is not served)
 *   `claim`s the event and writes it with the sink it gets back, when it knows its outcome;
 * - a request turned away before any message claimed one (a refusal, the MCP layer's own rejection,
 *   an internal error) is written by `settle`, which writes nothing once an event is claimed;
 * - a refusal counted into a per-minute summary instead of an event of its own is `waive`d.
 *
 * A 2025-03-26 batch is one request of several messages: each served message claims its own event.
 */
export interface RequestAudit extends EventOwner {
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
export function createRequestAudit(
  writer: EventSink,
  requestId: string,
  options: Omit<EventOwnerOptions, 'requestId'>,
): RequestAudit {
  const owner = createEventOwner({ requestId, ...options });
  let events = 0;
  let waived = false;
  return {
    server: owner.server,
    requestId,
    identify: owner.identify,
    event: owner.event,
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

/** Outcomes that leave the request's span unmarked: the successful ones. */
const UNMARKED: ReadonlySet<Outcome> = new Set(SUCCESSFUL_OUTCOMES);

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
    return Object.assign({}, e, { traceId: e.traceId ?? traceId });
  };
  const span = <T>(e: AuditEventInput, fn: (e: AuditEventInput) => Promise<T>) =>
    inSpan('audit append', { attributes: { 'bulkhead.audit.outcome': e.outcome } }, () => fn(stamp(e)));
  return {
    append: (e) => span(e, (s) => writer.append(s)),
    appendIn: (tx, e) => span(e, (s) => writer.appendIn(tx, s)),
    keep: (e) => span(e, (s) => writer.keep(s)),
  };
}
