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
  'internal_error',
  'pending_approval',
  'approved',
  'rejected',
  'executed',
  'expired',
] as const;

export type Outcome = (typeof OUTCOMES)[number];

/** What a caller hands to the writer; the writer adds id, time, chain position and hashes. */
export interface AuditEventInput {
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
}

/** A stored event, as read back. */
export interface AuditEvent {
  seq: number;
  id: string;
  at: Date;
  server: string;
  chainSeq: number;
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
  prevHash: string;
  hash: string;
}
