/** Every outcome an audit event can record. */
export const OUTCOMES = [
  'ok',
  'tool_error',
  'invalid_arguments',
  'unknown_tool',
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'bad_request',
  'rate_limited',
  'timeout',
  'cancelled',
  'unavailable',
  'internal_error',
  'pending_approval',
  'approved',
  'rejected',
  'executed',
  'expired',
  'withdrawn',
] as const;
export type Outcome = (typeof OUTCOMES)[number];

/**
 * Outcomes of a request that went as its caller asked: it ran, or it was filed for (or granted by) a
 * person and runs later. Every other outcome is an error: it marks the request's span with
 * `error.type` and is counted as one on `/metrics`.
 */
export const SUCCESSFUL_OUTCOMES: readonly Outcome[] = ['ok', 'pending_approval', 'approved', 'executed'];

/**
 * Outcomes that are no refusal and no failure of the request: the successful ones, and the later
 * steps of an approval that a person or the clock decided (rejected, expired, withdrawn). The
 * console's chart of refusals counts every other outcome.
 */
export const NOT_REFUSED_OUTCOMES: readonly Outcome[] = [
  ...SUCCESSFUL_OUTCOMES,
  'rejected',
  'expired',
  'withdrawn',
];

/** What a caller hands to the writer; the database adds the sequence number, time and role. */
export interface AuditEventInput {
  /** The event's id, when the writer must be able to tell a retry from a second event (a UUID; else one is drawn). */
  id?: string;
  /** The writing server. Under a server's own role the database records that server, whatever is given. */
  server: string;
  method: string;
  outcome: Outcome;
  requestId: string;
  durationMs: number;
  tokenId?: string | null;
  tokenLabel?: string | null;
  clientName?: string | null;
  clientVersion?: string | null;
  tool?: string | null;
  arguments?: unknown;
  resultSummary?: unknown;
  approvalId?: string | null;
  injectionSuspected?: boolean;
  /** The W3C trace id (32 lowercase hex digits) of the request's trace, when it is traced. */
  traceId?: string | null;
}

/** An event as it is stored: every field normalised and bounded (see `normaliseEvent`). */
export interface StoredEventFields {
  id: string;
  server: string;
  tokenId: string | null;
  tokenLabel: string | null;
  clientName: string | null;
  clientVersion: string | null;
  method: string;
  tool: string | null;
  arguments: unknown;
  outcome: Outcome;
  resultSummary: unknown;
  durationMs: number;
  requestId: string;
  approvalId: string | null;
  injectionSuspected: boolean;
  traceId: string | null;
}

/** A stored event, as read back. */
export interface AuditEvent extends StoredEventFields {
  seq: number;
  at: Date;
  /** The database role that wrote it (a server's login role, the console's, or the owner's). */
  dbRole: string;
}
