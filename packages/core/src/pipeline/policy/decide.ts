// One question to the policy set for every call: run, approve (how many distinct persons, from which
// groups) or refuse (with a sentence). The official Cedar engine answers allow or deny and names the
// policies that determined it; their annotations (policy-set.ts) turn that into the outcome.
//
// Allowed by several permits, the strictest decides: the most approvals (a run needs every
// determining permit to ask for none). Denied by a forbid, its @reason is the sentence; denied because
// nothing permits, a sentence that says so. A policy whose condition errs (an argument left out)
// counts as not satisfied, as Cedar has it, and is named among the errors for `explain`.
import type { CedarValueJson, EntityJson } from '@cedar-policy/cedar-wasm/nodejs';
import { serverNamespace } from './cedar-schema.ts';
import type { PolicySet } from './policy-set.ts';

/** Who calls: the token, its owner, and the groups the token's person is in. */
export interface PolicyPrincipal {
  tokenId: string;
  owner: string | null;
  scopes: readonly string[];
  groups: readonly string[];
}

/** One call as the policy sees it. */
export interface PolicyRequest {
  server: string;
  tool: string;
  /** The validated arguments. */
  args: Record<string, unknown>;
  gated: boolean;
  readOnly: boolean;
  principal: PolicyPrincipal;
  /** Calls of this tool by this token today, before this one (durable, across replicas). */
  usageToday: number;
  /** The facts the tool gives its policy (`policyFacts`), when it declares any. */
  facts?: Record<string, number | string | boolean> | undefined;
  now: Date;
  /** The IANA time zone `context.time` is given in (default UTC). */
  timeZone?: string;
}

/** What the policy decided, and which policies decided it. */
export type PolicyOutcome = { policies: string[]; errors: string[] } & (
  | { kind: 'run' }
  | { kind: 'approve'; approvals: number; groups: string[] }
  | { kind: 'refuse'; reason: string }
);

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** One formatter a time zone: making one costs far more than using it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The last minute read per time zone: every call of a minute asks for the same one. */
const lastMinute = new Map<
  string,
  { minute: number; time: { hour: number; minute: number; weekday: number } }
>();

/** Hour, minute and weekday (1 = Monday) of `now` in `timeZone`. */
export function timeOf(now: Date, timeZone = 'UTC'): { hour: number; minute: number; weekday: number } {
  const minute = Math.floor(now.getTime() / 60_000);
  const last = lastMinute.get(timeZone);
  if (last?.minute === minute) return last.time;
  const time = readTime(now, timeZone);
  lastMinute.set(timeZone, { minute, time });
  return time;
}

function readTime(now: Date, timeZone: string): { hour: number; minute: number; weekday: number } {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      hour: '2-digit',
      minute: '2-digit',
      weekday: 'short',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(now);
  const part = (type: string) => parts.find((p) => p.type === type)!.value;
  return {
    hour: Number(part('hour')),
    minute: Number(part('minute')),
    weekday: WEEKDAYS.indexOf(part('weekday')) + 1,
  };
}

/** The arguments as Cedar values: numbers with a fraction and nulls have no Cedar type, and are left out. */
function cedarValue(value: unknown): CedarValueJson | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : undefined;
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map(cedarValue).filter((v) => v !== undefined);
  if (typeof value === 'object') {
    const out: Record<string, CedarValueJson> = {};
    for (const [k, v] of Object.entries(value)) {
      const c = cedarValue(v);
      if (c !== undefined) out[k] = c;
    }
    return out;
  }
  return undefined;
}

const group = (name: string) => ({ type: 'Bulkhead::Group', id: name });

/** The sentence a call gets that no policy permits. */
export function notPermitted(tool: string): string {
  return `No policy lets this client call ${tool}; nothing was done. An operator can say which policy would cover it.`;
}

/** Asks `set` about one call. */
export function decide(set: PolicySet, r: PolicyRequest): PolicyOutcome {
  const token = { type: 'Bulkhead::Token', id: r.principal.tokenId };
  const entities: EntityJson[] = [
    {
      uid: token,
      attrs: {
        server: r.server,
        scopes: [...r.principal.scopes],
        ...(r.principal.owner !== null ? { owner: r.principal.owner } : {}),
      },
      parents: r.principal.groups.map(group),
    },
    ...r.principal.groups.map((g) => ({ uid: group(g), attrs: {}, parents: [] })),
  ];
  const answer = set.engine.statefulIsAuthorized({
    principal: token,
    action: { type: `${serverNamespace(r.server)}::Action`, id: r.tool },
    resource: { type: 'Bulkhead::Server', id: r.server },
    context: {
      args: cedarValue(r.args) ?? {},
      gated: r.gated,
      read_only: r.readOnly,
      time: timeOf(r.now, r.timeZone),
      usage: { today: r.usageToday },
      ...(r.facts ? { facts: r.facts } : {}),
    },
    preparsedPolicySetId: set.engineId,
    entities,
  });
  if (answer.type === 'failure')
    throw new Error(`the policy engine failed: ${answer.errors.map((e) => e.message).join('; ')}`);
  const { decision, diagnostics } = answer.response;
  const policies = [...diagnostics.reason].sort();
  const errors = diagnostics.errors.map((e) => `${e.policyId}: ${e.error.message}`);
  if (decision === 'deny') {
    const forbid = policies.find((id) => set.meta[id]?.effect === 'forbid');
    const reason = forbid
      ? (set.meta[forbid]!.reason ?? `Policy "${forbid}" refuses this call; nothing was done.`)
      : notPermitted(r.tool);
    return { kind: 'refuse', reason, policies, errors };
  }
  let strictest: string | undefined;
  for (const id of policies)
    if (!strictest || set.meta[id]!.approvals > set.meta[strictest]!.approvals) strictest = id;
  const meta = set.meta[strictest!]!;
  if (!meta.approvals) return { kind: 'run', policies, errors };
  return { kind: 'approve', approvals: meta.approvals, groups: meta.groups, policies, errors };
}
