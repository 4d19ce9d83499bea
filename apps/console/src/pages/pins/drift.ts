import type { McpDriftRecord } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';

/** Every drift every server recorded, newest first, as the database lets an operator read it. */
export function driftRecords(sql: Sql, operatorProof: string): Promise<McpDriftRecord[]> {
  return sql<McpDriftRecord[]>`
    select server, upstream, tool, sha256, kind, pinned, live, findings, blocked,
      seen_at as "seenAt", accepted_by as "acceptedBy", accepted_at as "acceptedAt"
    from bulkhead_operator_mcp_drift(${operatorProof})`;
}

/** Which drifted definition to accept. */
export interface DriftKey {
  server: string;
  upstream: string;
  tool: string;
  sha256: string;
}

/**
 * Accepts one drifted definition for this deployment, through the database's function that checks the
 * operator's right and refuses a new tool or a blocked definition. False when it was accepted already.
 */
export async function acceptDrift(sql: Sql, operatorProof: string, key: DriftKey): Promise<boolean> {
  const [row] = await sql<{ accepted: boolean }[]>`
    select bulkhead_operator_accept_mcp_drift(${operatorProof}, ${key.server}, ${key.upstream}, ${key.tool},
      ${key.sha256}) as accepted`;
  return row!.accepted;
}

/** The fields a person compares, in order: what the model reads first. */
export const COMPARED = ['description', 'title', 'inputSchema', 'outputSchema', 'annotations'] as const;

/** A field's text for the side-by-side view: a string as it is, anything else as indented JSON. */
export function fieldText(definition: Record<string, unknown> | null, field: string): string {
  const value = definition?.[field];
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
