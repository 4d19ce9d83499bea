export type { Access } from './access.ts';
export {
  defineTool,
  type AnyTool,
  type ApprovalSpec,
  type ToolAnnotations,
  type ToolContext,
  type ToolDefinition,
  type ToolIcon,
  type ToolSpec,
} from './define-tool.ts';
export { createServer, hasGatedTools, type ServerDefinition, type ServerOptions } from './create-server.ts';
export { createCatalog, type ToolCatalog, type ToolListing } from './catalog.ts';
export {
  callTool,
  DEFAULT_TIMEOUT_MS,
  type ApprovalRequester,
  type CallKit,
  type CallRequest,
} from './call-tool.ts';
export { createHttpApp, type HttpApp, type HttpAppOptions } from './http-app.ts';
export { serveStdio, StartupError, type StdioOptions } from './stdio.ts';
export { runServer, type RunOptions } from './run.ts';
export { ToolError, formatIssues } from './errors.ts';
export { secret, redactArguments, secretHash } from './secret.ts';
export {
  untrusted,
  isUntrusted,
  untrustedTextSchema,
  detectInjection,
  findHiddenCharacters,
  scanUntrusted,
  renderText,
  INJECTION_REASONS,
  type InjectionReason,
  type UntrustedText,
} from './untrusted.ts';
export {
  customerIdArg,
  docIdArg,
  invoiceNumberArg,
  limitArg,
  offsetArg,
  pageCheck,
  svgIcon,
  ticketKeyArg,
  untrustedTextRef,
} from './arguments.ts';
export {
  lintTools,
  lintServer,
  type LintableTool,
  type LintFinding,
  type LintOptions,
  type LintResult,
} from './lint/lint-tools.ts';
export { RULES, type LintRule, type RuleId } from './lint/rules.ts';
export {
  ConfigError,
  parseEnv,
  serverEnvSchema,
  baseEnvShape,
  workspaceRoot,
  type ServerEnv,
} from './config.ts';
export { createLogger, REDACT, type Logger, type LoggerOptions } from './logger.ts';
export {
  createTokenVerifier,
  getToken,
  issueToken,
  listTokens,
  parseToken,
  revokeToken,
  rotateToken,
  tokenState,
  type IssueTokenOptions,
  type TokenKind,
  type TokenRecord,
  type TokenRefusal,
  type TokenState,
  type TokenVerifier,
} from './tokens.ts';
export { createRateLimiter, type RateLimiter } from './rate-limit.ts';
export {
  APPROVAL_ID,
  APPROVAL_METHODS,
  APPROVAL_STATUSES,
  ApprovalDecisionError,
  approvalDeliveries,
  approvalEvents,
  approvalFacets,
  argumentsHash,
  consoleLink,
  createApprovalRequester,
  createOutbox,
  decideApproval,
  DEFAULT_CONSOLE_URL,
  DEFAULT_EXPIRY_HOURS,
  DeliveryError,
  dispatchOutbox,
  effectiveStatus,
  getApproval,
  getApprovalStatus,
  listApprovals,
  logEmail,
  PENDING_NOTE,
  pendingApprovalOutput,
  startApprovalExecutor,
  webhookDeliverer,
  type ApprovalDelivery,
  type ApprovalEvent,
  type ApprovalExecutor,
  type ApprovalExecutorOptions,
  type ApprovalFilter,
  type ApprovalRecord,
  type ApprovalStatus,
  type Decision,
  type Deliverer,
  type Outbox,
  type OutboxItem,
  type RetryPolicy,
} from './approvals/index.ts';
