// What a server author uses: tools, the server, running it, arguments, errors, untrusted text, config.
// What the CLI and the approvers' console need besides is in `@bulkhead/core/operator`; test helpers
// are in `@bulkhead/core/testing`.
export type { Access } from './access.ts';
/** The database client a handler gets as `ctx.sql` (postgres.js), for a server's named query functions. */
export type { Sql } from '@bulkhead/db';
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
export { createServer } from './create-server.ts';
export { hasGatedTools, type ServerDefinition, type ServerOptions } from './server-definition.ts';
export { createCatalog, type ToolCatalog, type ToolListing } from './catalog.ts';
export {
  callTool,
  DEFAULT_TIMEOUT_MS,
  type ApprovalRequester,
  type CallKit,
  type CallRequest,
} from './call-tool.ts';
export { PROGRESS_INTERVAL_MS, type ProgressReporter } from './progress.ts';
export { TASKS_EXTENSION, type TaskWire } from './tasks/task-state.ts';
export { createHttpApp, type HttpApp, type HttpAppOptions } from './http-app.ts';
export { bodyAborted } from './http/aborted.ts';
export { createRefusalLog, type RefusalLog } from './http/refusal-log.ts';
export { serveStdio, StartupError, type StdioOptions } from './stdio.ts';
export { createReadLanes, type ReadLanes, type ReadSettings } from './read-lanes.ts';
export {
  runServer,
  checkRole,
  checkPooler,
  connectFailure,
  POOLER_NEEDS,
  POOL_MAX,
  READ_POOL_MAX,
  SHUTDOWN_GRACE_MS,
  type RunOptions,
} from './run.ts';
export { ToolError } from './errors.ts';
export { secret } from './secret.ts';
export { untrusted, untrustedTextSchema, type UntrustedText } from './untrusted.ts';
export { dateArg, limitArg, lineArg, offsetArg, pageCheck, textArg, untrustedTextRef } from './arguments.ts';
export { svgIcon } from './icon.ts';
export {
  ConfigError,
  boolEnv,
  parseEnv,
  serverEnvSchema,
  baseEnvShape,
  workspaceRoot,
  type ServerEnv,
} from './config.ts';
export { createLogger, type Logger, type LoggerOptions } from './logger.ts';
/** For a handler's e-mail through `ctx.outbox`: a message checked for header injection. */
export { addressProblem, emailMessage, type EmailInput } from './approvals/email.ts';
/** Other systems a server reaches: declared in its manifest (`bulkhead.upstreams`), reached through `ctx.upstream('<name>')`. */
export { resolveUpstreams, upstreamsManifestSchema, type UpstreamManifest } from './upstream-config.ts';
export {
  UpstreamError,
  type UpstreamClient,
  type UpstreamRequestOptions,
  type UpstreamResponse,
} from './upstream/client.ts';
export {
  createUpstreams,
  type UpstreamAuth,
  type UpstreamConfig,
  type UpstreamRecord,
  type Upstreams,
} from './upstream/upstreams.ts';
/** For a gated handler's effect on an upstream through `ctx.outbox`, delivered once after approval. */
export {
  idempotencyKey,
  UPSTREAM_EFFECT,
  upstreamDeliverer,
  upstreamEffect,
  type UpstreamEffect,
} from './approvals/upstream-effect.ts';
