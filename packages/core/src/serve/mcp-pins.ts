import { createAuditWriter } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';
import { createEventOwner } from '../pipeline/observability/request-audit.ts';

/** A drift of an upstream MCP server's tool from a server's pin, as recorded, and its acceptance. */
export interface McpDriftRecord {
  server: string;
  upstream: string;
  tool: string;
  sha256: string;
  kind: 'changed' | 'new';
  pinned: Record<string, unknown> | null;
  live: Record<string, unknown>;
  findings: { rule: string; path: string; message: string }[];
  blocked: string | null;
  seenAt: Date;
  acceptedBy: string | null;
  acceptedAt: Date | null;
}

/** Every recorded drift, of one server or of all, newest first. Needs the owner's connection. */
export async function listMcpDrift(sql: Sql, server?: string): Promise<McpDriftRecord[]> {
  return sql<McpDriftRecord[]>`
    select d.server, d.upstream, d.tool, d.sha256, d.kind, d.pinned, d.live, d.findings, d.blocked,
      d.seen_at as "seenAt", a.accepted_by as "acceptedBy", a.accepted_at as "acceptedAt"
    from bulkhead_mcp_drift d
    left join bulkhead_mcp_pin_acceptances a using (server, upstream, tool, sha256)
    ${server ? sql`where d.server = ${server}` : sql``}
    order by d.seen_at desc, d.server, d.upstream, d.tool`;
}

/** Which drift is accepted, and by whom. */
export interface McpDriftAcceptance {
  server: string;
  upstream: string;
  tool: string;
  sha256: string;
  operator: string;
}

/** The acceptance's event: about the server, named by the operator, a request of its own. */
export function acceptanceEvent(input: McpDriftAcceptance, by: { tokenId: string | null; label: string }) {
  const owner = createEventOwner({ server: input.server, by });
  return owner.event({
    method: 'tools/accept_drift',
    tool: input.tool,
    outcome: 'ok',
    durationMs: 0,
    resultSummary: {
      upstream: input.upstream,
      upstream_tool: input.tool,
      sha256: input.sha256,
      accepted_by: input.operator,
    },
  });
}

/**
 * Accepts a drifted definition for this deployment, with its audit event in the same transaction: every
 * replica of the server serves it on the database's announcement. The database refuses a new tool and
 * a definition the linter blocked. False when it was accepted already. Needs the owner's connection (the CLI).
 */
export async function acceptMcpDrift(sql: Sql, input: McpDriftAcceptance): Promise<boolean> {
  const audit = createAuditWriter(sql);
  return sql.begin(async (tx) => {
    const [row] = await tx<{ accepted: boolean }[]>`
      select bulkhead_accept_mcp_drift(${input.server}, ${input.upstream}, ${input.tool}, ${input.sha256},
        ${input.operator}) as accepted`;
    if (!row?.accepted) return false;
    await audit.appendIn(tx, acceptanceEvent(input, { tokenId: null, label: input.operator }));
    return true;
  });
}
