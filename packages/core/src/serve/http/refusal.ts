import type { Outcome } from '@bulkhead/audit';

/**
 * A request turned away before it reached the MCP layer. Thrown by a guard;
 * the app's `onError` answers it and writes its audit event, so that every
 * refusal is answered and audited the same way.
 */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 406 | 413 | 415 | 429 | 503,
    readonly outcome: Outcome,
    readonly body: Record<string, unknown>,
    readonly options: {
      headers?: Record<string, string>;
      /** What the audit event records besides the status (the reason, the refused value). */
      summary?: Record<string, unknown>;
    } = {},
  ) {
    super(`${status} ${outcome}`);
  }
}

/** A JSON-RPC error body for refusals of the protocol layer (parse errors, invalid requests). */
export function rpcError(code: number, message: string, id: unknown = null): Record<string, unknown> {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message } };
}
