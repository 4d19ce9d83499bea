import type { SwitchedOffTool } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { asOperator } from '../../operator/read.ts';

/** Every switched-off tool of every server, by server and tool, as the database lets an operator read them. */
export function switchedOffTools(sql: Sql, operatorProof: string): Promise<SwitchedOffTool[]> {
  return sql<SwitchedOffTool[]>`
    select server, tool, reason, switched_by as "switchedBy", switched_at as "switchedAt"
    from bulkhead_operator_tool_switches(${operatorProof})`;
}

/** A switch an operator asks for: `off` with a reason, or on again. */
export interface ToolSwitchRequest {
  server: string;
  tool: string;
  off: boolean;
  /** Why it goes off; null to switch it on. */
  reason: string | null;
}

/**
 * Switches one tool of an MCP server off or on again, through the database's function that first checks
 * the operator's right; every replica of the server hears of it by NOTIFY. False when it already was.
 */
export async function switchTool(
  sql: Sql,
  operatorProof: string,
  request: ToolSwitchRequest,
): Promise<boolean> {
  const [row] = await sql<{ changed: boolean }[]>`
    select bulkhead_operator_switch_tool(${operatorProof}, ${request.server}, ${request.tool}, ${request.off}, ${request.reason}) as changed`;
  return row!.changed;
}

/** A tool seen called on a server. */
export interface SeenTool {
  server: string;
  tool: string;
}

const SEEN_DAYS = 30;
const SEEN_MAX = 500;

/**
 * The tools `servers` answered calls to in the last 30 days (a call to a tool a server does not have is
 * no suggestion), for the switch form to offer.
 */
export function recentlyCalledTools(
  sql: Sql,
  operatorProof: string,
  servers: readonly string[],
): Promise<SeenTool[]> {
  if (!servers.length) return Promise.resolve([]);
  return asOperator(
    sql,
    operatorProof,
    (tx) => tx<SeenTool[]>`
      select distinct server, tool from audit_events
      where method = 'tools/call' and tool is not null and outcome <> 'unknown_tool'
        and at > now() - ${SEEN_DAYS} * interval '1 day' and server in ${tx(servers)}
      order by server, tool limit ${SEEN_MAX}`,
  );
}
