import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '@bulkhead/audit';
import type { Sql } from '@bulkhead/db';

/**
 * Where an approval stands. `pending` waits for a person, `approved` is about to run; the rest are
 * final. `withdrawn`: the requesting client took it back (`tasks/cancel`) before anyone decided.
 */
export const APPROVAL_STATUSES = [
  'pending',
  'approved',
  'rejected',
  'expired',
  'executed',
  'failed',
  'withdrawn',
] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** Why an approved action did not complete. */
export type ApprovalFailure = 'tool_error' | 'timeout' | 'internal_error' | 'refused';

/** One stored approval, as people and tools see it (the exact arguments only where they are needed). */
export interface ApprovalRecord {
  id: string;
  server: string;
  tool: string;
  arguments: unknown;
  argumentsRedacted: unknown;
  argumentsHash: string;
  preview: string;
  /**
   * The values the effect will use, as read when the request was filed and shown to the approver
   * (`approval.values` of the tool); null for a tool without them. No deployable can change them.
   */
  approvedValues: Record<string, unknown> | null;
  status: ApprovalStatus;
  requestedAt: Date;
  expiresAt: Date;
  requestId: string;
  requestedByTokenId: string | null;
  requestedByLabel: string | null;
  requestedScopes: string[];
  customerId: string | null;
  decidedAt: Date | null;
  decidedBy: string | null;
  decidedByTokenId: string | null;
  decisionReason: string | null;
  /** The arguments hash the decider approved; the executor runs only arguments with this hash. */
  decidedArgumentsHash: string | null;
  executedAt: Date | null;
  executedBy: string | null;
  durationMs: number | null;
  result: unknown;
  error: string | null;
  failure: ApprovalFailure | null;
  /** Requested as an MCP task: the approval id is also the task id of the requesting token. */
  asTask: boolean;
  /** When the requester withdrew it (status `withdrawn`). */
  withdrawnAt: Date | null;
  /** The span that filed it, as a W3C `traceparent` (when that call was traced): its execution links to it. */
  filedInTrace: string | null;
  /** Distinct persons who must approve it (the company's policy; 1 without one). */
  requiredApprovals: number;
  /** The groups they come from (empty: any approver of the server). */
  approverGroups: string[];
  /** The active policy set's version that decided it, and the deciding policies (none without one). */
  policyVersion: string | null;
  policyIds: string[];
  /** The active policy let it run without a person: filed approved, by its first deciding policy. */
  approvedByPolicy: boolean;
}

/** The select list matching {@link ApprovalRecord}. */
export const APPROVAL_COLUMNS = `id, server, tool, arguments, arguments_redacted as "argumentsRedacted",
  arguments_hash as "argumentsHash", preview, approved_values as "approvedValues", status,
  requested_at as "requestedAt", expires_at as "expiresAt", request_id as "requestId",
  requested_by_token_id as "requestedByTokenId", requested_by_label as "requestedByLabel",
  requested_scopes as "requestedScopes", customer_id as "customerId",
  decided_at as "decidedAt", decided_by as "decidedBy", decided_by_token_id as "decidedByTokenId",
  decision_reason as "decisionReason", decided_arguments_hash as "decidedArgumentsHash", executed_at as "executedAt", executed_by as "executedBy",
  duration_ms as "durationMs", result, error, failure, as_task as "asTask", withdrawn_at as "withdrawnAt",
  filed_in_trace as "filedInTrace", required_approvals as "requiredApprovals",
  approver_groups as "approverGroups", policy_version as "policyVersion", policy_ids as "policyIds",
  approved_by_policy as "approvedByPolicy"`;

const ID_ALPHABET = 'abcdefghijkmnpqrstuvwxyz23456789';

/** `ap_` and 12 random characters: short enough for a model to repeat, long enough not to be guessed. */
export function newApprovalId(): string {
  return `ap_${Array.from(randomBytes(12), (b) => ID_ALPHABET[b % ID_ALPHABET.length]).join('')}`;
}

/** The shape of an approval id, for argument schemas and routes. */
export const APPROVAL_ID = /^ap_[a-z2-9]{12}$/;

/** What jsonb gives back for `value`: the form that is stored, hashed and later run. */
export function storedForm(value: unknown): unknown {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

/** sha256 over the canonical JSON of the stored form of `args` (key order and jsonb round trips do not change it). */
export function argumentsHash(args: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(storedForm(args)))
    .digest('hex');
}

/** The status an approval effectively has now: a pending one past its expiry counts as expired. */
export function effectiveStatus(
  a: Pick<ApprovalRecord, 'status' | 'expiresAt'>,
  now = new Date(),
): ApprovalStatus {
  return a.status === 'pending' && a.expiresAt <= now ? 'expired' : a.status;
}

export async function getApproval(sql: Sql, id: string): Promise<ApprovalRecord | undefined> {
  if (!APPROVAL_ID.test(id)) return undefined;
  const [row] = await sql<ApprovalRecord[]>`
    select ${sql.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals where id = ${id}`;
  return row;
}

/** Filters of {@link listApprovals}. */
export interface ApprovalFilter {
  status?: ApprovalStatus;
  server?: string;
  tool?: string;
  /** Default 50, at most 500. */
  limit?: number;
  /** `newest` first (default), or `oldest` first (what waits longest, closest to expiry). */
  order?: 'newest' | 'oldest';
}

/**
 * Approvals, newest first unless asked otherwise. `pending` means still decidable (not past expiry);
 * `expired` includes pending ones past their expiry that no sweep has marked yet.
 */
export async function listApprovals(
  sql: Sql,
  filter: ApprovalFilter = {},
): Promise<{ approvals: ApprovalRecord[]; truncated: boolean }> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500);
  const status =
    filter.status === 'pending'
      ? sql`and status = 'pending' and expires_at > now()`
      : filter.status === 'expired'
        ? sql`and (status = 'expired' or (status = 'pending' and expires_at <= now()))`
        : filter.status
          ? sql`and status = ${filter.status}`
          : sql``;
  const rows = await sql<ApprovalRecord[]>`
    select ${sql.unsafe(APPROVAL_COLUMNS)} from bulkhead_approvals
    where true ${status}
    ${filter.server ? sql`and server = ${filter.server}` : sql``}
    ${filter.tool ? sql`and tool = ${filter.tool}` : sql``}
    order by ${filter.order === 'oldest' ? sql`requested_at, id` : sql`requested_at desc, id`}
    limit ${limit + 1}`;
  return { approvals: rows.slice(0, limit), truncated: rows.length > limit };
}

/** The servers and tools that have approvals, for filter menus. */
export async function approvalFacets(sql: Sql): Promise<{ servers: string[]; tools: string[] }> {
  const servers = await sql<{ v: string }[]>`select distinct server as v from bulkhead_approvals order by 1`;
  const tools = await sql<{ v: string }[]>`select distinct tool as v from bulkhead_approvals order by 1`;
  return { servers: servers.map((r) => r.v), tools: tools.map((r) => r.v) };
}

/** One audit event about an approval, for the story shown by `approvals show` and the console. */
export interface ApprovalEvent {
  at: Date;
  server: string;
  method: string;
  outcome: string;
  tokenLabel: string | null;
  resultSummary: unknown;
}

/** Every audit event that names the approval, in log order. */
export async function approvalEvents(sql: Sql, id: string): Promise<ApprovalEvent[]> {
  return sql<ApprovalEvent[]>`
    select at, server, method, outcome, token_label as "tokenLabel", result_summary as "resultSummary"
    from audit_events where approval_id = ${id} order by seq`;
}

/** Every delivery of the outbox that belongs to the approval (notifications, e-mails). */
export interface ApprovalDelivery {
  id: number;
  kind: string;
  status: string;
  attempts: number;
  deliveredAt: Date | null;
  lastError: string | null;
}

export async function approvalDeliveries(sql: Sql, id: string): Promise<ApprovalDelivery[]> {
  const rows = await sql<(ApprovalDelivery & { id: string })[]>`
    select id, kind, status, attempts, delivered_at as "deliveredAt", last_error as "lastError"
    from bulkhead_outbox where approval_id = ${id} order by id`;
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}
