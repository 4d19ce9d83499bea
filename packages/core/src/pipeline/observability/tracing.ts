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

/** The trace context a request names: its `_meta` first, else its HTTP headers. */
function incomingContext(meta: unknown, headers?: Headers | undefined): Context {
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

/**
 * The client's span a request names (its `_meta` first, else its HTTP headers) as a link, none when it
 * names none. A request's server span begins a trace of the server's own: its id is what the audit
 * event records and an approval page shows as "the call that filed it", so a caller cannot choose it
 * (and file events under another call's trace); the client's trace is kept as this link.
 */
export function incomingLinks(meta: unknown, headers?: Headers | undefined): Link[] {
  const sc = trace.getSpanContext(incomingContext(meta, headers));
  return sc && isSpanContextValid(sc) ? [{ context: sc, attributes: { 'bulkhead.link': 'client' } }] : [];
}

/** A step of a request timed before its server span began: the token check on a cache miss. */
export interface EarlyStep {
  name: string;
  /** `performance.now()` at its start and its end. */
  start: number;
  end: number;
  attributes?: Attributes;
}

/** When a request arrived and what it did before the MCP layer took it, while a tracer is installed. */
interface Early {
  arrived: number;
  steps: EarlyStep[];
}
const early = new WeakMap<object, Early>();
let installed = false;

/** Whether a tracer provider is installed (`serve/tracing.ts`): untraced, no request is noted at all. */
export function setTracingInstalled(on: boolean): void {
  installed = on;
}

/** Notes that `request` arrived at `at`: its server span begins then, not when the MCP layer reaches it. */
export function requestArrived(request: object, at: number): void {
  if (installed) early.set(request, { arrived: at, steps: [] });
}

/** Notes a step `request` took before its server span began; it becomes a child span of it. */
export function earlyStep(request: object, step: EarlyStep): void {
  early.get(request)?.steps.push(step);
}

/** What `request` noted, once (a batch's later messages begin their spans on their own). */
function takeEarly(request: object | undefined): Early | undefined {
  const e = request && early.get(request);
  if (e) early.set(request, { arrived: e.arrived, steps: [] });
  return e;
}

/** What the server span of one MCP request says, by the MCP semantic conventions. */
export interface RequestSpan {
  method: string;
  /** The tool's (or prompt's, resource's) name: the span is named `{method} {target}`. */
  target?: string | undefined;
  protocolVersion?: string | undefined;
  rpcId?: string | number | undefined;
  /** The client's span, if it named one ({@link incomingLinks}): linked, never the parent. */
  links: Link[];
  /** When the HTTP request arrived and the steps it took before the MCP layer (`requestArrived`). */
  early?: Early | undefined;
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
  const steps = r.early?.steps ?? [];
  return inSpan(
    name,
    {
      kind: SpanKind.SERVER,
      attributes,
      links: r.links,
      ...(r.early ? { startTime: epochMs(r.early.arrived) } : {}),
    },
    steps.length ? () => (addSteps(steps), fn()) : fn,
    ROOT_CONTEXT,
  );
}

/**
 * A `performance.now()` reading as milliseconds since the epoch. Given as is, each span would turn it
 * into wall time with an offset of its own (taken from `Date.now()`, to the millisecond), and a child
 * could start before its parent.
 */
const epochMs = (t: number) => performance.timeOrigin + t;

/** The early steps as children of the active span, with the times they took. */
function addSteps(steps: EarlyStep[]): void {
  for (const s of steps)
    tracer
      .startSpan(s.name, {
        startTime: epochMs(s.start),
        ...(s.attributes ? { attributes: s.attributes } : {}),
      })
      .end(epochMs(s.end));
}

/**
 * Runs `fn` (answering and auditing a request refused before the MCP layer read it: 401, 413, 429,
 * 503) in a server span of its own, named by the HTTP method and route as the body's MCP method is
 * unknown, in a trace of the server's own linked to the client's `traceparent`, with `error.type` the outcome.
 */
export function traceRefusal<T>(
  r: { request: Request; route: string; status: number; outcome: string },
  fn: () => Promise<T>,
): Promise<T> {
  const e = takeEarly(r.request);
  const attributes: Attributes = {
    'http.request.method': r.request.method,
    'http.route': r.route,
    'http.response.status_code': r.status,
    'error.type': r.outcome,
  };
  return inSpan(
    `${r.request.method} ${r.route}`,
    {
      kind: SpanKind.SERVER,
      attributes,
      links: incomingLinks(undefined, r.request.headers),
      ...(e ? { startTime: epochMs(e.arrived) } : {}),
    },
    (span) => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      if (e?.steps.length) addSteps(e.steps);
      return fn();
    },
    ROOT_CONTEXT,
  );
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
      links: incomingLinks(r.meta, r.ctx.http?.req?.headers),
      early: takeEarly(r.ctx.http?.req),
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
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[]; startTime?: number },
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
