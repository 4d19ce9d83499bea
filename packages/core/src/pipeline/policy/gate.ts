// The policy step of a call: the question a call asks the company's policy set before it runs or is
// filed, with the durable count a quota needs taken in the call's own transaction.
import type { Sql } from '@bulkhead/db';
import type { Access } from '../call/access.ts';
import type { TransactionSql } from '../database/guarded-sql.ts';
import type { AnyTool } from '../tool-definition/define-tool.ts';
import { decide, timeOf, type PolicyOutcome, type PolicyRequest } from './decide.ts';
import type { PolicySet } from './policy-set.ts';

/** The set a server's calls are decided by now, or why there is none it may use. */
export type PolicyState =
  | {
      set: PolicySet;
      /** An operator approved it (false: the default set, no set having been approved yet). */
      active: boolean;
      /** Whether a policy reads `context.usage`: only then does a call count. */
      countsUsage: boolean;
      /** Whether a policy names a group of the caller's: only then are the token's groups read. */
      readsGroups: boolean;
    }
  | { broken: string };

/** What a call asks its policy through (the server's watch of the active set). */
export interface PolicyGate {
  state(): PolicyState | Promise<PolicyState>;
  /** The IANA time zone `context.time` is given in (`BULKHEAD_POLICY_TIME_ZONE`, default UTC). */
  timeZone: string;
}

/** The policy's answer for one call, with the version of the set that gave it. */
export type CallVerdict = PolicyOutcome & { version: string | null; active: boolean };

/** What a call is refused with when the active set cannot be used: never a call without policy. */
export const POLICY_UNREADABLE =
  "The company's approval policy could not be read, so no call runs or is filed now; nothing was done. Tell an operator (bulkhead policy show).";

/**
 * Asks `gate` about a call of `tool` with the validated `args`. In a transaction (`counting`), and when
 * a policy reads `context.usage`, the calls of this tool by this token today are counted durably: the
 * count's row stays locked until the call's transaction ends, and a call that is not refused is added
 * to it, so that two replicas never both let the eleventh through.
 */
export async function askPolicy(
  gate: PolicyGate,
  call: {
    server: string;
    tool: AnyTool;
    args: unknown;
    access: Access;
    q: Sql | TransactionSql;
    counting: boolean;
  },
): Promise<CallVerdict> {
  const state = await gate.state();
  if ('broken' in state)
    return {
      kind: 'refuse',
      reason: POLICY_UNREADABLE,
      policies: [],
      errors: [state.broken],
      version: null,
      active: true,
    };
  const { tool, access, q } = call;
  const counting = call.counting && state.countsUsage;
  let usageToday = 0;
  if (counting) {
    const [row] = await q<{ n: number }[]>`
      select bulkhead_policy_usage_today(${access.tokenId}, ${tool.name}, false) as n`;
    usageToday = row!.n;
  }
  let groups: string[] = [];
  if (state.readsGroups) {
    const [row] = await q<
      { groups: string[] | null }[]
    >`select bulkhead_token_groups(${access.tokenId}) as groups`;
    groups = row?.groups ?? [];
  }
  const args = (call.args ?? {}) as Record<string, unknown>;
  const request: PolicyRequest = {
    server: call.server,
    tool: tool.name,
    args,
    gated: Boolean(tool.approval),
    readOnly: Boolean(tool.annotations.readOnlyHint),
    principal: {
      tokenId: access.tokenId,
      owner: access.owner ?? null,
      scopes: access.scopes,
      groups,
    },
    usageToday,
    now: new Date(),
    timeZone: gate.timeZone,
    facts: tool.policyFacts?.of(args),
  };
  const outcome = decideRemembered(state.set, request);
  if (counting && outcome.kind !== 'refuse')
    await q`select bulkhead_policy_usage_today(${access.tokenId}, ${tool.name}, true)`;
  return { ...outcome, version: state.set.version, active: state.active };
}

/** Most answers one set remembers; past it, it starts afresh. */
const MEMO_ENTRIES = 4096;
/** A request whose key is longer (long arguments) is asked every time rather than remembered. */
const MEMO_KEY_CHARS = 2048;
const memos = new WeakMap<PolicySet, Map<string, PolicyOutcome>>();

/**
 * The set's answer to `r`. Cedar decides from exactly what it is given, so the same request to the same
 * set gets the same answer: the engine (whose every question costs tens of microseconds of JSON across
 * the WebAssembly boundary) is asked once per distinct request — the tool, its arguments and facts,
 * the caller (token, owner, scopes, groups), today's count and the minute of the day — and its answer
 * is remembered for the set's life.
 */
export function decideRemembered(set: PolicySet, r: PolicyRequest): PolicyOutcome {
  const t = timeOf(r.now, r.timeZone);
  const p = r.principal;
  const key = JSON.stringify([
    r.server,
    r.tool,
    r.gated,
    r.readOnly,
    r.args,
    r.facts ?? null,
    t.hour,
    t.minute,
    t.weekday,
    r.usageToday,
    p.tokenId,
    p.owner,
    p.scopes,
    p.groups,
  ]);
  if (key.length > MEMO_KEY_CHARS) return decide(set, r);
  let memo = memos.get(set);
  if (!memo) memos.set(set, (memo = new Map()));
  let outcome = memo.get(key);
  if (!outcome) {
    if (memo.size >= MEMO_ENTRIES) memo.clear();
    outcome = decide(set, r);
    memo.set(key, outcome);
  }
  return outcome;
}

/** What a call's audit event keeps of its verdict: the deciding policies and the set's version. */
export function verdictSummary(v: CallVerdict): Record<string, unknown> {
  return {
    policy: v.policies,
    ...(v.version ? { policy_version: v.version } : {}),
    ...(v.errors.length ? { policy_errors: v.errors } : {}),
  };
}
