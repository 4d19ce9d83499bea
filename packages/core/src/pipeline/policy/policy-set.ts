// A policy set as Bulkhead reads it: Cedar text, each policy named by an `@id` annotation and saying
// by annotations what it asks of people:
//
//   @id("credit notes up to 1000 need finance")   a name, unique in the set: events and `explain` cite it
//   @approvals("1")                                a permit: how many distinct persons must approve (none: it runs)
//   @groups("finance")                             a permit with approvals: the groups they come from (any, when absent)
//   @reason("…")                                   a forbid: the sentence the model gets (a default when absent)
//
// Parsed and validated by the official Cedar engine against the schema of the servers' tools.
import { createHash } from 'node:crypto';
import type * as Cedar from '@cedar-policy/cedar-wasm/nodejs';
import type { DetailedError, SchemaJson } from '@cedar-policy/cedar-wasm/nodejs';

/** The Cedar engine's module: loaded on first use (its 4 MB of WebAssembly), not by every importer of the kit. */
export type CedarEngine = typeof Cedar;
let engine: Promise<CedarEngine> | undefined;

/** The Cedar engine, loaded once. */
export function cedarEngine(): Promise<CedarEngine> {
  engine ??= import('@cedar-policy/cedar-wasm/nodejs');
  return engine;
}

/** What one policy says besides its condition. */
export interface PolicyMeta {
  effect: 'permit' | 'forbid';
  /** Distinct persons who must approve (0: the call runs). Permits only. */
  approvals: number;
  /** Groups the approvers come from (empty: any approver). */
  groups: string[];
  /** A forbid's sentence for the model. */
  reason: string | null;
}

/** A parsed, validated policy set, ready to decide calls. */
export interface PolicySet {
  /** The SHA-256 of its text: the version events and approvals record. */
  version: string;
  text: string;
  /** Each policy's text by its id. */
  policies: Record<string, string>;
  meta: Record<string, PolicyMeta>;
  /** The id under which the Cedar engine holds it parsed. */
  engineId: string;
  engine: CedarEngine;
}

/** A policy set that does not parse or validate: every finding, as sentences. */
export class PolicySetInvalid extends Error {
  override readonly name = 'PolicySetInvalid';
  constructor(readonly findings: string[]) {
    super(`the policy set is not valid: ${findings.join('; ')}`);
  }
}

const MAX_APPROVALS = 9;

const message = (e: DetailedError) => (e.help ? `${e.message} (${e.help})` : e.message);

/** The annotations of one policy, checked: findings are pushed to `findings`. */
function metaOf(
  id: string,
  json: { effect: string; annotations?: Record<string, string> },
  findings: string[],
) {
  const a = json.annotations ?? {};
  const effect = json.effect as PolicyMeta['effect'];
  const approvals = a.approvals === undefined ? 0 : Number(a.approvals);
  if (a.approvals !== undefined) {
    if (effect !== 'permit') findings.push(`policy "${id}": @approvals belongs on a permit`);
    else if (!Number.isInteger(approvals) || approvals < 1 || approvals > MAX_APPROVALS)
      findings.push(`policy "${id}": @approvals must be a whole number from 1 to ${MAX_APPROVALS}`);
  }
  const groups = (a.groups ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  if (groups.length && !approvals) findings.push(`policy "${id}": @groups needs @approvals`);
  if (a.reason !== undefined && effect !== 'forbid')
    findings.push(`policy "${id}": @reason belongs on a forbid`);
  return { effect, approvals, groups, reason: a.reason ?? null };
}

/**
 * Parses `text` and validates it against `schema` (strict mode); throws {@link PolicySetInvalid}. A
 * server, which knows only its own tools, loads the active set with `schema` null: that set was validated
 * against every server's tools when it was proposed and approved.
 */
export async function loadPolicySet(text: string, schema: SchemaJson<string> | null): Promise<PolicySet> {
  const cedar = await cedarEngine();
  const parts = cedar.policySetTextToParts(text);
  if (parts.type === 'failure') throw new PolicySetInvalid(parts.errors.map(message));
  if (parts.policy_templates.length)
    throw new PolicySetInvalid(['templates are not supported; write policies']);
  const findings: string[] = [];
  const policies: Record<string, string> = {};
  const meta: Record<string, PolicyMeta> = {};
  for (const policy of parts.policies) {
    const json = cedar.policyToJson(policy);
    if (json.type === 'failure') throw new PolicySetInvalid(json.errors.map(message));
    const id = json.json.annotations?.id;
    if (!id) {
      findings.push(`a policy has no @id("…"): ${policy.slice(0, 80)}`);
      continue;
    }
    if (policies[id] !== undefined) findings.push(`two policies are called "${id}"`);
    policies[id] = policy;
    meta[id] = metaOf(id, json.json as Parameters<typeof metaOf>[1], findings);
  }
  if (!parts.policies.length) findings.push('the set has no policy: every call would be refused');
  if (findings.length) throw new PolicySetInvalid(findings);
  const checked =
    schema &&
    cedar.validate({
      schema,
      policies: { staticPolicies: policies },
      validationSettings: { mode: 'strict' },
    });
  if (checked?.type === 'failure') throw new PolicySetInvalid(checked.errors.map(message));
  if (checked?.validationErrors.length)
    throw new PolicySetInvalid(
      checked.validationErrors.map((e) => `policy "${e.policyId}": ${message(e.error)}`),
    );
  const version = createHash('sha256').update(text).digest('hex');
  const engineId = `bulkhead-${version}`;
  const parsed = cedar.preparsePolicySet(engineId, { staticPolicies: policies });
  if (parsed.type === 'failure') throw new PolicySetInvalid(parsed.errors.map(message));
  return { version, text, policies, meta, engineId, engine: cedar };
}
