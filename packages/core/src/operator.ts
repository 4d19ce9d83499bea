// What operators' tools need of the kit — the CLI and the approvers' console — and server code does
// not: managing tokens, deciding and listing approvals, metrics, the tool linter, showing text as it
// is. `@bulkhead/core/operator`.
export { createMetrics, metricsRoute, type Metrics, type MetricsSources } from './serve/metrics.ts';
export { sourceOf } from './serve/http/request-context/index.ts';
export {
  createEventOwner,
  type ClientInfo,
  type EventDraft,
  type EventOwner,
  type EventOwnerOptions,
  type Party,
} from './pipeline/observability/request-audit.ts';
export {
  listSwitchedOffTools,
  switchToolOff,
  switchToolOn,
  type SwitchedOffTool,
  type ToolSwitchInput,
} from './serve/tool-switches.ts';
export {
  groupRightsProblems,
  listGroups,
  removeGroup,
  setGroup,
  type GroupChange,
  type GroupRights,
} from './serve/groups.ts';
export { secretHash } from './pipeline/text-safety/secret.ts';
export {
  codePointLabel,
  escapeJson,
  hiddenCodePointName,
  isHiddenCodePoint,
  visible,
  visibleLines,
} from './pipeline/text-safety/visible.ts';
export { mixedScriptWords, type MixedScriptWord } from './pipeline/text-safety/mixed-script.ts';
export {
  personKey,
  personNameProblem,
  samePerson,
  tidyPersonName,
} from './pipeline/text-safety/person-name.ts';
export { shownUrl, withUrlsShown } from './pipeline/observability/shown-url.ts';
export {
  lintTools,
  lintServer,
  modelPart,
  TOOL_NAME,
  type LintableTool,
  type LintFinding,
  type LintOptions,
  type LintResult,
} from './pipeline/tool-definition/lint/lint-tools.ts';
export { RULES, type LintRule, type RuleId } from './pipeline/tool-definition/lint/rules.ts';
export { clientConfigs } from './serve/client-configs.ts';
export {
  createTokenVerifier,
  getToken,
  issueGrantToken,
  issueToken,
  issueTokenAsOperator,
  issueTokenAsPerson,
  listTokens,
  parseToken,
  revokeToken,
  rotateToken,
  tokenState,
  type GrantSecret,
  type IssueTokenOptions,
  type TokenKind,
  type TokenRecord,
  type TokenRefusal,
  type TokenState,
  type TokenVerdict,
  type TokenVerifier,
  type TokenVerifierOptions,
  tokenPersons,
} from './serve/tokens.ts';
export {
  APPROVAL_ID,
  APPROVAL_STATUSES,
  ApprovalDecisionError,
  approvalDeliveries,
  approvalEvents,
  approvalFacets,
  argumentsHash,
  decideApproval,
  DEFAULT_CONSOLE_URL,
  effectiveStatus,
  getApproval,
  listApprovals,
  smtpDeliverer,
  startApprovalExecutor,
  type ApprovalDelivery,
  type ApprovalEvent,
  type ApprovalExecutor,
  type ApprovalRecord,
  type ApprovalStatus,
  type SmtpOptions,
} from './approvals/index.ts';
export { PENDING_NOTE } from './pipeline/call/pending-result.ts';
export { listCaughtMail, storeCaughtMail, type CaughtMail } from './approvals/caught-mail.ts';
export {
  activePolicySet,
  decidePolicySet,
  listPolicySets,
  POLICY_CHANNEL,
  PolicyChangeRefused,
  proposePolicySet,
  type PolicyActor,
  type PolicySetRecord,
} from './pipeline/policy/store.ts';
export {
  cedarSchema,
  decide,
  DEFAULT_POLICY,
  loadPolicySet,
  PolicySetInvalid,
  policyTools,
  type ListedTool,
  type PolicyOutcome,
  type PolicyRequest,
  type PolicySet,
} from './pipeline/policy/index.ts';
export { createCatalog } from './pipeline/tool-definition/catalog.ts';
/** Drift of upstream MCP servers from a server's pins, and an operator's acceptance (the CLI, with the owner's connection). */
export {
  acceptMcpDrift,
  acceptanceEvent,
  listMcpDrift,
  type McpDriftAcceptance,
  type McpDriftRecord,
} from './serve/mcp-pins.ts';
export { BLOCKING_RULES } from './pipeline/mcp-upstream/drift.ts';
