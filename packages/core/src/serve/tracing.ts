import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import { setTracingInstalled } from '../pipeline/observability/tracing.ts';

/** Where a process sends its spans: the standard OpenTelemetry variables, as read by the deployable's config. */
export interface TracingOptions {
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: the collector's base URL (`/v1/traces` is added). */
  endpoint?: string | undefined;
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the full traces URL, used as is (wins over `endpoint`). */
  tracesEndpoint?: string | undefined;
  /** `OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…` sent with every export (a collector's API key). */
  headers?: Record<string, string> | undefined;
  /** `OTEL_SERVICE_NAME`, else the deployable's name. */
  serviceName: string;
  /** `OTEL_TRACES_SAMPLER` (default `parentbased_always_on`) and its `OTEL_TRACES_SAMPLER_ARG`. */
  sampler?: string | undefined;
  samplerArg?: number | undefined;
}

/** The sampler OpenTelemetry's variables name (the specification's names; the SDK reads no variable itself). */
export function samplerOf(name = 'parentbased_always_on', arg = 1): Sampler {
  const ratio = new TraceIdRatioBasedSampler(arg);
  const root: Record<string, Sampler> = {
    always_on: new AlwaysOnSampler(),
    always_off: new AlwaysOffSampler(),
    traceidratio: ratio,
  };
  if (name in root) return root[name]!;
  const base = name.replace(/^parentbased_/, '');
  if (!name.startsWith('parentbased_') || !(base in root)) throw new Error(`unknown sampler ${name}`);
  return new ParentBasedSampler({ root: root[base]! });
}

/** A process's tracing, once started: `shutdown` exports what is still buffered. */
export interface Tracing {
  readonly enabled: boolean;
  /** Exports every span ended so far. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const OFF: Tracing = { enabled: false, flush: async () => {}, shutdown: async () => {} };

/** The traces URL the options name, or undefined when tracing is off. */
export function tracesUrl(o: Pick<TracingOptions, 'endpoint' | 'tracesEndpoint'>): string | undefined {
  if (o.tracesEndpoint) return o.tracesEndpoint;
  if (o.endpoint) return `${o.endpoint.replace(/\/+$/, '')}/v1/traces`;
  return undefined;
}

/**
 * Installs the process's tracer provider, exporting spans over OTLP/HTTP (JSON) in batches, with W3C
 * trace context propagation and async-local context. Without an endpoint nothing is installed: the
 * kit's spans stay the API's no-ops, and a request pays for none of it.
 */
export function startTracing(options: TracingOptions): Tracing {
  const url = tracesUrl(options);
  if (!url) return OFF;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    sampler: samplerOf(options.sampler, options.samplerArg),
    spanProcessors: [
      new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url, headers: options.headers ?? {} }) }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  setTracingInstalled(true);
  return {
    enabled: true,
    flush: () => provider.forceFlush(),
    async shutdown() {
      setTracingInstalled(false);
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** `OTEL_EXPORTER_OTLP_HEADERS` (`key=value,…`, values percent-encoded) as a record. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    out[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return out;
}
