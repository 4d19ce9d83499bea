import type { AnyTool, ToolIcon } from './define-tool.ts';
import { createCatalog, type ToolCatalog } from './catalog.ts';
import { getApprovalStatus } from './approvals/get-approval-status.ts';

/** What a server is, independent of how it is served. */
export interface ServerOptions {
  /** The server's name, also the audience of its tokens (`admin`, `customer`, `dev-knowledge`). */
  name: string;
  version: string;
  title?: string;
  description: string;
  icons?: ToolIcon[];
  tools: readonly AnyTool[];
  /** The budget of the whole tools/list in characters, checked by the linter (default 12,000). */
  toolsBudgetChars?: number;
  /** The budget of the part a model reads: name, title, description, input schema (default 6,000). */
  modelBudgetChars?: number;
}

/** A server ready to be served over HTTP (`createHttpApp`) or stdio (`serveStdio`). */
export interface ServerDefinition extends Readonly<Omit<ServerOptions, 'tools'>> {
  title: string;
  catalog: ToolCatalog;
  toolsBudgetChars: number;
  modelBudgetChars: number;
}

const SERVER_NAME = /^[a-z][a-z0-9-]{0,39}$/;

/** True when some tool of the server stops at an approval gate. */
export function hasGatedTools(def: Pick<ServerDefinition, 'catalog'>): boolean {
  return def.catalog.tools.some((t) => t.approval);
}

/**
 * Builds a server definition from its tools: the tool listings and JSON
 * schemas are computed here, once, because the MCP handler builds a fresh
 * protocol instance per request. A server with a gated tool also gets
 * `get_approval_status`, so that the model can learn what became of a request.
 */
export function createServer(options: ServerOptions): ServerDefinition {
  if (!SERVER_NAME.test(options.name))
    throw new Error(`server name "${options.name}" must be lower-case letters, digits and -`);
  const { tools, ...meta } = options;
  return Object.freeze({
    ...meta,
    title: options.title ?? options.name,
    toolsBudgetChars: options.toolsBudgetChars ?? 12_000,
    modelBudgetChars: options.modelBudgetChars ?? 6000,
    catalog: createCatalog(tools.some((t) => t.approval) ? [...tools, getApprovalStatus] : tools),
  });
}
