import { createCatalog } from '../pipeline/tool-definition/catalog.ts';
import { getApprovalStatus } from '../approvals/get-approval-status.ts';
import type { ServerDefinition, ServerOptions } from '../pipeline/tool-definition/server-definition.ts';

const SERVER_NAME = /^[a-z][a-z0-9-]{0,39}$/;

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
    modelBudgetChars: options.modelBudgetChars ?? 6000,
    catalog: createCatalog(tools.some((t) => t.approval) ? [...tools, getApprovalStatus] : tools),
  });
}
