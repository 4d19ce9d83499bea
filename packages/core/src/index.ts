// What a server author uses: tools, the server, running it, arguments, errors, untrusted text, config.
// What the CLI and the approvers' console need besides is in `@bulkhead/core/operator`; test helpers
// are in `@bulkhead/core/testing`.
export type { Access } from './pipeline/call/access.ts';
/** The database client a handler gets as `ctx.sql` (postgres.js), for a server's named query functions. */
export type { Sql } from '@bulkhead/db';
export {
  defineTool,
  READ_ONLY,
  type AnyTool,
  type ApprovalSpec,
  type ApprovedValues,
  type ToolAnnotations,
  type ToolContext,
  type ToolDefinition,
  type ToolIcon,
  type ToolSpec,
} from './pipeline/tool-definition/define-tool.ts';
export { createServer } from './serve/create-server.ts';
export {
  hasGatedTools,
  type ServerDefinition,
  type ServerOptions,
} from './pipeline/tool-definition/server-definition.ts';
export { createCatalog, type ToolCatalog, type ToolListing } from './pipeline/tool-definition/catalog.ts';
export {
  callTool,
  type ApprovalRequester,
  type CallKit,
  type CallRequest,
} from './pipeline/call/call-tool.ts';
export { DEFAULT_TIMEOUT_MS } from './pipeline/call/time-limit.ts';
export { PROGRESS_INTERVAL_MS, type ProgressReporter } from './pipeline/call/progress.ts';
export { TASKS_EXTENSION, type TaskWire } from './tasks/task-state.ts';
export { createHttpApp, type HttpApp, type HttpAppOptions } from './serve/http-app.ts';
export { bodyAborted } from './serve/http/aborted.ts';
export { createRefusalLog, type RefusalLog } from './serve/http/refusal-log.ts';
export { serveStdio, StartupError, type StdioOptions } from './serve/stdio.ts';
export { readySchema, schemaBehind, type ReadySchemaOptions } from './serve/schema.ts';
export { createReadLanes, type ReadLanes, type ReadSettings } from './pipeline/database/read-lanes.ts';
export { SESSIONS_SHARED } from './serve/pooler.ts';
export { checkPooler, POOLER_NEEDS } from './serve/pooler.ts';
export {
  checkRole,
  connectFailure,
  openOwnDatabase,
  ownGrants,
  prepareDatabase,
  type StartUpEnv,
} from './serve/start-up.ts';
export { runServer, POOL_MAX, READ_POOL_MAX, SHUTDOWN_GRACE_MS, type RunOptions } from './serve/run.ts';
export { ToolError } from './pipeline/tool-definition/errors.ts';
export {
  compileModelPattern,
  MODEL_PATTERN_MAX_LENGTH,
  MODEL_PATTERN_MAX_NESTING,
  MODEL_PATTERN_MAX_REPEAT,
  ModelPatternError,
  type ModelPattern,
  type ModelPatternOptions,
} from './pipeline/text-safety/model-pattern.ts';
export { secret } from './pipeline/text-safety/secret.ts';
export { untrusted, untrustedTextSchema, type UntrustedText } from './pipeline/text-safety/untrusted/wrap.ts';
export {
  dateArg,
  limitArg,
  lineArg,
  offsetArg,
  pageCheck,
  textArg,
  untrustedTextRef,
} from './pipeline/tool-definition/arguments.ts';
export { svgIcon } from './pipeline/tool-definition/icon.ts';
/** For a gate's preview: a value from outside, in quotes it cannot close. */
export { quoted } from './pipeline/text-safety/quoted.ts';
export {
  ConfigError,
  boolEnv,
  parseEnv,
  serverEnvSchema,
  baseEnvShape,
  workspaceRoot,
  type ServerEnv,
} from './serve/config.ts';
export { createLogger, type Logger, type LoggerOptions } from './pipeline/observability/logger.ts';
export { shownUrl, withUrlsShown } from './pipeline/observability/shown-url.ts';
/** For a handler's e-mail through `ctx.outbox`: a message checked for header injection. */
export { addressProblem, emailMessage, type EmailInput } from './approvals/email.ts';
/** Other systems a server reaches: declared in its manifest (`bulkhead.upstreams`), reached through `ctx.upstream('<name>')`. */
export { ownManifest, resolveUpstreams } from './serve/upstream-config.ts';
/** The manifest's schema is @bulkhead/deployables'; named here too for servers that import only the kit. */
export { upstreamsManifestSchema, type Manifest, type UpstreamManifest } from '@bulkhead/deployables';
export {
  UpstreamError,
  type UpstreamClient,
  type UpstreamRequestOptions,
  type UpstreamResponse,
} from './pipeline/upstream/client.ts';
export {
  createUpstreams,
  type UpstreamAuth,
  type UpstreamConfig,
  type UpstreamRecord,
  type Upstreams,
} from './pipeline/upstream/upstreams.ts';
/** For a gated handler's effect on an upstream through `ctx.outbox`, delivered once after approval. */
export {
  idempotencyKey,
  UPSTREAM_EFFECT,
  upstreamDeliverer,
  upstreamEffect,
  type UpstreamEffect,
} from './approvals/upstream-effect.ts';
/** For a tool whose text an effect writes where a check before a retry looks (refuses a planted key). */
export { mentionsOutboxKey } from './approvals/outbox.ts';
export {
  cedarSchema,
  decide,
  decideRemembered,
  DEFAULT_POLICY,
  loadPolicySet,
  notPermitted,
  policyTools,
  PolicySetInvalid,
  serverNamespace,
  timeOf,
  type ListedTool,
  type PolicyMeta,
  type PolicyOutcome,
  type PolicyPrincipal,
  type PolicyRequest,
  type PolicySet,
} from './pipeline/policy/index.ts';
/** A bounded server in front of an MCP server nobody here wrote: its pins, served and forwarded (`new server --from-mcp`). */
export { resolveMcpUpstream, readPins } from './serve/mcp-upstream-config.ts';
export { createMcpUpstreams, type McpUpstreams } from './pipeline/mcp-upstream/upstreams.ts';
export {
  createMcpConnection,
  McpUpstreamDown,
  type McpConnection,
  type McpUpstreamConfig,
} from './pipeline/mcp-upstream/connection.ts';
export {
  pinnedAnnotations,
  pinnedPreview,
  pinnedTool,
  servedName,
  type PinnedToolOptions,
} from './pipeline/mcp-upstream/pinned-tool.ts';
export {
  formatPinFile,
  parsePinFile,
  pinHash,
  pinTool,
  type PinFile,
  type PinnedTool,
} from './pipeline/mcp-upstream/pins.ts';
export type { McpAnswer, McpUpstreamClient } from './pipeline/mcp-upstream/client.ts';
