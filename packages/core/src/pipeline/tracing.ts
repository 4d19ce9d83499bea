import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';
import { PROTOCOL_VERSION_META_KEY, type ServerContext } from '@modelcontextprotocol/server';

/**
 * The kit's spans, by OpenTelemetry's API only: until a process installs a tracer provider
 * (`serve/tracing.ts`, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set) every call here is the API's no-op,
 * and no span, context or attribute is made.
 */
const tracer = trace.getTracer('@bulkhead/core');

/** W3C trace context as a request carries it: `params._meta` (2026-07-28) or HTTP headers. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/** The trace context a request names: its `_meta` first, else its HTTP headers; none: a new trace. */
export function incomingContext(meta: unknown, headers?: Headers | undefined): Context {
  const m = (meta && typeof meta === 'object' ? meta : {}) as Record<string, unknown>;
  const carrier: Record<string, string> = {};
  if (typeof m.traceparent === 'string') {
    carrier.traceparent = m.traceparent;
    if (typeof m.tracestate === 'string') carrier.tracestate = m.tracestate;
  } else {
    const parent = headers?.get('traceparent');
    if (parent) {
      carrier.traceparent = parent;
      const state = headers?.get('tracestate');
      if (state) carrier.tracestate = state;
    }
  }
  return carrier.traceparent ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
}

/** What the server span of one MCP request says, by the MCP semantic conventions. */
export interface RequestSpan {
  method: string;
  /** The tool's (or prompt's, resource's) name: the span is named `{method} {target}`. */
  target?: string | undefined;
  protocolVersion?: string | undefined;
  rpcId?: string | number | undefined;
  parent: Context;
}

/**
 * Runs `fn` inside the server span of one MCP request, named `{mcp.method.name} {target}`. No
 * arguments, secrets or customer text become attributes: only the method, the tool's name, the
 * protocol version and the JSON-RPC id; `error.type` is added by whoever learns the outcome
 * ({@link markError}).
 */
export function traceRequest<T>(r: RequestSpan, fn: () => Promise<T>): Promise<T> {
  const attributes: Attributes = { 'mcp.method.name': r.method };
  if (r.protocolVersion) attributes['mcp.protocol.version'] = r.protocolVersion;
  if (r.rpcId !== undefined) attributes['jsonrpc.request.id'] = String(r.rpcId);
  if (r.method === 'tools/call' && r.target !== undefined) {
    attributes['gen_ai.tool.name'] = r.target;
    attributes['gen_ai.operation.name'] = 'execute_tool';
  }
  const name = r.target === undefined ? r.method : `${r.method} ${r.target}`;
  return inSpan(name, { kind: SpanKind.SERVER, attributes }, fn, r.parent);
}

/**
 * {@link traceRequest} for a request as the SDK hands it to a handler: its trace context from its
 * `_meta` (`meta`), else from the HTTP request's headers; its protocol version from its envelope
 * (2026-07-28) or the one the session negotiated.
 */
export function traceMcpRequest<T>(
  server: { getNegotiatedProtocolVersion(): string | undefined },
  r: { method: string; target?: string | undefined; meta: unknown; ctx: ServerContext },
  fn: () => Promise<T>,
): Promise<T> {
  const envelope = r.ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const version = envelope?.[PROTOCOL_VERSION_META_KEY] ?? server.getNegotiatedProtocolVersion();
  return traceRequest(
    {
      method: r.method,
      target: r.target,
      rpcId: r.ctx.mcpReq.id,
      protocolVersion: typeof version === 'string' ? version : undefined,
      parent: incomingContext(r.meta, r.ctx.http?.req?.headers),
    },
    fn,
  );
}

/**
 * Runs `fn` in a new span, child of the active one: ended when `fn` settles, an exception recorded
 * (its type as `error.type`, never its message, which may quote data).
 */
export function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[] },
  fn: (span: Span) => Promise<T>,
  parent: Context = context.active(),
): Promise<T> {
  return tracer.startActiveSpan(name, options, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markError(span, err instanceof Error ? err.constructor.name : 'error');
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` (the active one by default) as failed with `type` (`error.type`). */
export function markError(span: Span | undefined, type: string): void {
  if (!span?.isRecording()) return;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The active span, if one is being recorded. */
export function activeSpan(): Span | undefined {
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/** The active trace's id (what the audit event and the log lines record), or null when not traced. */
export function activeTraceId(): string | null {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? sc.traceId : null;
}

/** The active span as a W3C `traceparent`, stored with what a later span links to; null when not traced. */
export function activeTraceparent(): string | null {
  const sc = trace.getActiveSpan()?.spanContext();
  if (!sc || !isSpanContextValid(sc)) return null;
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 1).toString(16).padStart(2, '0')}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A link to the span a stored `traceparent` names (the call that filed an approval); none if absent. */
export function linkTo(traceparent: string | null | undefined): Link[] {
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return [];
  const sc: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true };
  return isSpanContextValid(sc) ? [{ context: sc }] : [];
}

/** Adds the active trace context to outgoing HTTP headers (an upstream request). */
export function injectTraceHeaders(headers: Record<string, string>): void {
  propagation.inject(context.active(), headers);
}

/** The log bindings of the active span: pino's `mixin`, so that every log line names its trace. */
export function traceLogFields(): { traceId?: string; spanId?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { traceId: sc.traceId, spanId: sc.spanId } : {};
}

const SUMMARY_TABLE = /\b(?:from|into|update|join)\s+("?[a-z_][a-z0-9_.]*"?)/i;

/**
 * A statement's short summary (`db.query.summary`): its first keyword and the first table it names,
 * from the query's static text only, so no value ever reaches it (values are parameters).
 */
export function statementSummary(strings: readonly string[]): string {
  const text = strings.join('?').trim();
  const op = /^[a-z]+/i.exec(text)?.[0]?.toUpperCase() ?? 'SQL';
  const table = SUMMARY_TABLE.exec(text)?.[1]?.replaceAll('"', '');
  return table ? `${op} ${table}` : op;
}

export { ROOT_CONTEXT, SpanKind };
