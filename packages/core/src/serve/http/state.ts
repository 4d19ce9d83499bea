import type { Logger } from 'pino';
import type { Access } from '../../pipeline/call/access.ts';
import type { RequestAudit } from '../../pipeline/observability/request-audit.ts';

/** What one JSON-RPC message of the request asks for, as far as the guards need to know. */
export interface RpcMessage {
  method: string | null;
  /** The tool a `tools/call` names, as sent (any type: an unknown name is the call pipeline's to refuse). */
  tool: unknown;
  /** A `tools/call` whose params have the shape the pipeline takes (object params, string name, object or no arguments). */
  wellFormedCall: boolean;
}

/** What a request carries from guard to guard (`c.set` / `c.get`), and into the MCP layer. */
export interface RequestVars {
  requestId: string;
  /** `performance.now()` when the request arrived. */
  started: number;
  log: Logger;
  /** The client's address, for per-source limits on unauthenticated requests. */
  source: string;
  /** The caller, once the bearer token is verified. */
  access: Access | undefined;
  /** The parsed body of a POST. */
  body: unknown;
  /** Its messages (one, or several in a 2025-03-26 batch). */
  messages: RpcMessage[];
  /**
   * The owner of the request's audit event: whatever answers the request writes it through this. The
   * bearer check tells it the token (a genuine one it refused included), which every event then names.
   */
  audit: RequestAudit;
}

/** The Hono environment of the MCP endpoint. */
export interface McpEnv {
  Variables: RequestVars;
}
