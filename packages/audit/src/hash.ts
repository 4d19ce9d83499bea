import { createHash } from 'node:crypto';
import type { AuditEvent } from './events.ts';

/** The hash every chain starts from. */
export const GENESIS = '0'.repeat(64);

/** JSON with object keys sorted at every depth: the same value always serialises to the same bytes. */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

type Hashed = Omit<AuditEvent, 'seq' | 'hash'>;

/** SHA-256 over the previous hash and the canonical form of every recorded field. */
export function eventHash(event: Hashed): string {
  const body = canonicalJson({
    id: event.id,
    at: event.at.toISOString(),
    server: event.server,
    chainSeq: event.chainSeq,
    tokenId: event.tokenId,
    tokenLabel: event.tokenLabel,
    clientName: event.clientName,
    clientVersion: event.clientVersion,
    method: event.method,
    tool: event.tool,
    arguments: event.arguments,
    outcome: event.outcome,
    resultSummary: event.resultSummary,
    durationMs: event.durationMs,
    requestId: event.requestId,
    approvalId: event.approvalId,
    injectionSuspected: event.injectionSuspected,
  });
  return createHash('sha256').update(event.prevHash).update('\n').update(body).digest('hex');
}
