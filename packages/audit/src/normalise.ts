import { createHash, randomUUID } from 'node:crypto';
import type { AuditEventInput, StoredEventFields } from './events.ts';

/** How deep stored JSON may nest; deeper values are replaced by a marker (the kit refuses such calls before they run). */
export const MAX_DEPTH = 32;
/** The largest JSON value stored for arguments or a summary; a larger one is stored as its size and hash. */
export const MAX_JSON_CHARS = 64 * 1024;
/** The longest single string kept inside stored JSON. */
export const MAX_STRING_CHARS = 16 * 1024;

/** Length limits of the short fields, in characters. */
export const FIELD_LIMITS = {
  server: 40,
  method: 100,
  tool: 200,
  clientName: 200,
  clientVersion: 100,
  requestId: 200,
  tokenId: 64,
  tokenLabel: 200,
  approvalId: 64,
} as const;

// C0 and C1 controls: never part of a name, and NUL is refused by PostgreSQL text and jsonb alike.
// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex -- NUL is what jsonb refuses
const NUL = /\u0000/g;

/** Cuts `text` to `max` characters without splitting a surrogate pair, marking how much was cut. */
function cap(text: string, max: number): string {
  if (text.length <= max) return text;
  const marker = `…[+${text.length - max} chars]`;
  return text.slice(0, Math.max(0, max - marker.length)).toWellFormed() + marker;
}

/** A short field: any value becomes well-formed text without control characters, bounded. */
export function cleanField(value: unknown, max: number): string | null {
  if (value === null || value === undefined) return null;
  const text = typeof value === 'string' ? value : String(value as never);
  return cap(text.toWellFormed().replace(CONTROL, '\uFFFD'), max);
}

function cleanString(text: string): string {
  return cap(text.toWellFormed().replace(NUL, '\uFFFD'), MAX_STRING_CHARS);
}

function cleanValue(value: unknown, depth: number): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return cleanString(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (typeof value !== 'object') return null;
  if (depth >= MAX_DEPTH) return `[nested deeper than ${MAX_DEPTH} levels]`;
  if (Array.isArray(value)) return value.map((v) => cleanValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === undefined) continue;
    out[cleanString(key)] = cleanValue(v, depth + 1);
  }
  return out;
}

/**
 * JSON as it is stored: well-formed strings without NUL (which jsonb refuses), finite numbers,
 * at most {@link MAX_DEPTH} levels; larger than {@link MAX_JSON_CHARS} it is replaced by its size,
 * its SHA-256 and its top-level keys, so that no value can make the event unwritable.
 */
export function cleanJson(value: unknown): unknown {
  const cleaned = cleanValue(value, 0);
  if (cleaned === null) return null;
  const text = JSON.stringify(cleaned);
  if (text.length <= MAX_JSON_CHARS) return cleaned;
  return {
    _bulkhead_truncated: true,
    chars: text.length,
    sha256: createHash('sha256').update(text).digest('hex'),
    keys:
      cleaned && typeof cleaned === 'object' && !Array.isArray(cleaned)
        ? Object.keys(cleaned).slice(0, 50)
        : [],
  };
}

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Every field of an event normalised and bounded: the form that is stored, sealed and verified. */
export function normaliseEvent(input: AuditEventInput): StoredEventFields {
  return {
    id: input.id && UUID.test(input.id) ? input.id : randomUUID(),
    server: cleanField(input.server, FIELD_LIMITS.server) ?? '',
    tokenId: cleanField(input.tokenId, FIELD_LIMITS.tokenId),
    tokenLabel: cleanField(input.tokenLabel, FIELD_LIMITS.tokenLabel),
    clientName: cleanField(input.clientName, FIELD_LIMITS.clientName),
    clientVersion: cleanField(input.clientVersion, FIELD_LIMITS.clientVersion),
    method: cleanField(input.method, FIELD_LIMITS.method) ?? '',
    tool: cleanField(input.tool, FIELD_LIMITS.tool),
    arguments: cleanJson(input.arguments),
    outcome: input.outcome,
    resultSummary: cleanJson(input.resultSummary),
    durationMs: Number.isFinite(input.durationMs)
      ? Math.min(Math.max(0, Math.round(input.durationMs)), 2_147_483_647)
      : 0,
    requestId: cleanField(input.requestId, FIELD_LIMITS.requestId) ?? '',
    approvalId: cleanField(input.approvalId, FIELD_LIMITS.approvalId),
    injectionSuspected: input.injectionSuspected === true,
    traceId: typeof input.traceId === 'string' && TRACE_ID.test(input.traceId) ? input.traceId : null,
  };
}
