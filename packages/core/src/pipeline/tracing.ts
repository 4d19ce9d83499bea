// Where upstream/client.ts still imports its tracing from: that file is being edited on another branch,
// so its imports move once both are merged (to ../observability/tracing.ts); then this file goes.
export { activeSpan, injectTraceHeaders, inSpan, SpanKind } from './observability/tracing.ts';
