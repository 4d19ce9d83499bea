import { NOT_REFUSED_OUTCOMES } from '@bulkhead/audit';
import type { ApprovalStatus } from '@bulkhead/core/operator';
import type { Sql } from '@bulkhead/db';
import { asOperator, type TransactionSql } from '../../operator/read.ts';
import type { ChartRange } from './range.ts';

/** Tool calls of one server in one bucket. */
export interface ServerCalls {
  bucket: Date;
  server: string;
  calls: number;
}

/** Tool calls of one tool of one server. */
export interface ToolCalls {
  server: string;
  tool: string;
  calls: number;
}

/** Refused or failed events with one outcome and one reason (null: the event names none). */
export interface Refusals {
  outcome: string;
  reason: string | null;
  events: number;
}

/** Approval requests that came to one status. */
export interface ApprovalOutcome {
  status: ApprovalStatus;
  requests: number;
}

/** How long decisions took: over every decided request of the range, in seconds. */
export interface DecisionTimes {
  decided: number;
  medianSeconds: number | null;
  p90Seconds: number | null;
  /** Decided requests per bin of {@link DECISION_BINS}, in its order. */
  histogram: number[];
}

/** The audit log's tail that no seal covers yet. */
export interface Backlog {
  unsealed: number;
  oldestAt: Date | null;
}

/** Everything the charts page draws. */
export interface ChartData {
  calls: ServerCalls[];
  /** The busiest {@link TOP_TOOLS} tools, busiest first. */
  tools: ToolCalls[];
  /** How many tools were called in the range, of which `tools` are the busiest. */
  toolCount: number;
  refusals: Refusals[];
  approvals: ApprovalOutcome[];
  decisions: DecisionTimes;
  backlog: Backlog;
}

/** How many tools the calls-per-tool chart shows. */
export const TOP_TOOLS = 15;

/** The time-to-decision histogram's bins: each up to (not including) its `below` seconds. */
export const DECISION_BINS = [
  { label: 'under 1 min', below: 60 },
  { label: '1–5 min', below: 300 },
  { label: '5–15 min', below: 900 },
  { label: '15–60 min', below: 3_600 },
  { label: '1–4 h', below: 14_400 },
  { label: '4–24 h', below: 86_400 },
  { label: '1 day or more', below: Infinity },
] as const;

/**
 * Outcomes that are no refusal: a call that ran or waits for a person, and the later steps of an
 * approval (their own chart counts those, from the approvals).
 */
const NOT_REFUSED = [...NOT_REFUSED_OUTCOMES];

function callsPerServer(tx: TransactionSql, range: ChartRange) {
  return tx<ServerCalls[]>`
    select date_trunc(${range.bucket}, at, 'UTC') as bucket, server, count(*)::int as calls
    from audit_events
    where method = 'tools/call' and at >= ${range.from} and at < ${range.to}
    group by 1, 2 order by 1, 2`;
}

async function callsPerTool(
  tx: TransactionSql,
  range: ChartRange,
): Promise<{ tools: ToolCalls[]; count: number }> {
  const rows = await tx<(ToolCalls & { tools: number })[]>`
    select server, tool, count(*)::int as calls, (count(*) over ())::int as tools
    from audit_events
    where method = 'tools/call' and at >= ${range.from} and at < ${range.to} and tool is not null
    group by server, tool order by calls desc, server, tool limit ${TOP_TOOLS}`;
  return {
    tools: rows.map(({ server, tool, calls }) => ({ server, tool, calls })),
    count: rows[0]?.tools ?? 0,
  };
}

/**
 * Events that are housekeeping, though older servers wrote them as refusals: a client's `GET /mcp` for
 * an event stream, which a server without one answers 405 (every 2025-era client sends one after it
 * initializes). Servers now answer it with no event; these are the ones already in the log.
 */
function housekeeping(tx: TransactionSql) {
  return tx`coalesce(method = 'http GET' and result_summary->>'status' = '405', false)`;
}

function refusals(tx: TransactionSql, range: ChartRange) {
  return tx<Refusals[]>`
    select outcome, result_summary->>'reason' as reason, count(*)::int as events
    from audit_events
    where outcome not in ${tx(NOT_REFUSED)} and not ${housekeeping(tx)} and at >= ${range.from} and at < ${range.to}
    group by 1, 2 order by events desc, outcome, reason nulls first`;
}

function approvalOutcomes(tx: TransactionSql, range: ChartRange) {
  // A pending request past its expiry is expired, whether or not a server has marked it yet (as
  // `effectiveStatus` tells it on the other pages).
  return tx<ApprovalOutcome[]>`
    select case when status = 'pending' and expires_at <= now() then 'expired' else status end as status,
      count(*)::int as requests
    from bulkhead_approvals
    where requested_at >= ${range.from} and requested_at < ${range.to}
    group by 1`;
}

async function decisionTimes(tx: TransactionSql, range: ChartRange): Promise<DecisionTimes> {
  const limits = DECISION_BINS.slice(0, -1).map((b) => b.below);
  const decided = tx`
    select extract(epoch from decided_at - requested_at)::float8 as seconds from bulkhead_approvals
    where decided_at is not null and requested_at >= ${range.from} and requested_at < ${range.to}`;
  const [summary] = await tx<{ decided: number; median: number | null; p90: number | null }[]>`
    with d as (${decided})
    select count(*)::int as decided,
      percentile_cont(0.5) within group (order by seconds) as median,
      percentile_cont(0.9) within group (order by seconds) as p90
    from d`;
  // width_bucket answers 0 below the first limit, i from the i-th on: the index of the bin.
  const bins = await tx<{ bin: number; requests: number }[]>`
    with d as (${decided})
    select width_bucket(seconds, ${tx.array(limits)}::float8[]) as bin, count(*)::int as requests
    from d group by 1`;
  const histogram = DECISION_BINS.map((_, i) => bins.find((b) => b.bin === i)?.requests ?? 0);
  return {
    decided: summary!.decided,
    medianSeconds: summary!.median,
    p90Seconds: summary!.p90,
    histogram,
  };
}

async function backlog(tx: TransactionSql): Promise<Backlog> {
  const [row] = await tx<{ unsealed: number; oldestAt: Date | null }[]>`
    select unsealed::int as unsealed, oldest_at as "oldestAt" from bulkhead_audit_backlog()`;
  return row!;
}

/**
 * What the charts draw over `range`, counted by the database (grouped in SQL, never event by event
 * here), read in one transaction that names the operator: only then may the console read the whole
 * audit log.
 */
export function chartData(sql: Sql, operatorProof: string, range: ChartRange): Promise<ChartData> {
  return asOperator(sql, operatorProof, async (tx) => {
    const calls = await callsPerServer(tx, range);
    const tools = await callsPerTool(tx, range);
    const refused = await refusals(tx, range);
    const approvals = await approvalOutcomes(tx, range);
    const decisions = await decisionTimes(tx, range);
    return {
      calls,
      tools: tools.tools,
      toolCount: tools.count,
      refusals: refused,
      approvals,
      decisions,
      backlog: await backlog(tx),
    };
  });
}
