// The policy room (in the pipeline: a call asks it): who must approve what, as the company's Cedar policy (issue 47). cedar-schema (the
// schema made from the servers' tools), policy-set (parsing, annotations, validation), decide (one
// question a call: run, approve or refuse), default-policy (today's gates, as policy).
export { cedarSchema, policyTools, serverNamespace, type ListedTool } from './cedar-schema.ts';
export {
  askPolicy,
  decideRemembered,
  POLICY_UNREADABLE,
  type CallVerdict,
  type PolicyGate,
  type PolicyState,
} from './gate.ts';
export { DEFAULT_POLICY } from './default-policy.ts';
export {
  decide,
  notPermitted,
  timeOf,
  type PolicyOutcome,
  type PolicyPrincipal,
  type PolicyRequest,
} from './decide.ts';
export { loadPolicySet, PolicySetInvalid, type PolicyMeta, type PolicySet } from './policy-set.ts';
