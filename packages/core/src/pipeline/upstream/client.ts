import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import { activeSpan, injectTraceHeaders, inSpan, SpanKind } from '../observability/tracing.ts';
import { BodyFailed, readCapped, scrub, upstreamResponse, type UpstreamResponse } from './answer.ts';
import { target } from './request-url.ts';
import { UpstreamError } from './upstream-error.ts';
import type { UpstreamConfig, UpstreamRecord, Upstreams } from './upstreams.ts';

export { UpstreamError } from './upstream-error.ts';
export type { UpstreamResponse } from './answer.ts';

/** One query parameter's value. */
export type UpstreamQueryValue =
  string | number | boolean | readonly (string | number | boolean)[] | undefined;

/** Options of one request. `{name}` placeholders in the path are filled from `params`, each encoded. */
export interface UpstreamRequestOptions {
  params?: Record<string, string | number>;
  /** The query string: undefined is left out, a list repeats its key (`filter=a&filter=b`). */
  query?: Record<string, UpstreamQueryValue>;
  /** Sent as JSON (`content-type: application/json`). */
  json?: unknown;
  headers?: Record<string, string>;
  /** Sent as `Idempotency-Key` (the outbox id when an approved effect is delivered). */
  idempotencyKey?: string;
  /** A POST that only reads (a search): allowed in a read-only tool, and retried as a read. */
  read?: boolean;
}

/** What a handler gets from `ctx.upstream('<name>')`. */
export interface UpstreamClient {
  readonly name: string;
  get(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
  post(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
  put(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
  patch(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
  delete(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
  request(method: string, path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse>;
}

/** Where a client runs: in a tool call (read-only or not), or delivering an approved effect from the outbox. */
export interface UpstreamClientContext {
  /** The call's (or delivery's) signal: its time limit and cancellation reach the request. */
  signal: AbortSignal;
  /** The call's list of requests, which goes into its audit event. */
  records: UpstreamRecord[];
  /** A read-only tool: only reads (GET, HEAD, or `read: true`) are sent. */
  readOnly: boolean;
}

const READS = new Set(['GET', 'HEAD']);
const RETRY_STATUS = new Set([502, 503, 504]);
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_CLOSED',
]);
const MAX_REDIRECTS = 3;
const MAX_RECORDS = 50;

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1))} s`;
}

function bytesText(n: number): string {
  return n >= 1024 * 1024 ? `${Number((n / 1024 / 1024).toFixed(1))} MiB` : `${Math.ceil(n / 1024)} KiB`;
}

/**
 * The client of one declared upstream. Every request goes to the upstream's own origin (an absolute
 * URL or a redirect elsewhere is refused); carries the upstream's credentials, which nothing records;
 * stops when the call's signal aborts (time limit, cancellation) or after the upstream's own time
 * limit; reads at most `maxResponseBytes`; and is recorded (name, method, path template and path,
 * status, bytes, milliseconds) for the call's audit event and `/metrics`. A read (GET, HEAD) is retried
 * on a connection error or 502/503/504 with backoff while the call's time allows; a write never is.
 */
export function createUpstreamClient(
  upstreams: Upstreams,
  name: string,
  context: UpstreamClientContext,
): UpstreamClient {
  const config = upstreams.byName.get(name);
  if (!config)
    throw new Error(
      `upstream "${name}" is not declared in this server's bulkhead.upstreams (declared: ${[...upstreams.byName.keys()].join(', ') || 'none'})`,
    );
  const send = (method: string, path: string, options: UpstreamRequestOptions = {}) =>
    sendRequest(upstreams, config, context, method.toUpperCase(), path, options);
  return {
    name,
    get: (p, o) => send('GET', p, o),
    post: (p, o) => send('POST', p, o),
    put: (p, o) => send('PUT', p, o),
    patch: (p, o) => send('PATCH', p, o),
    delete: (p, o) => send('DELETE', p, o),
    request: send,
  };
}

async function sendRequest(
  upstreams: Upstreams,
  config: UpstreamConfig,
  context: UpstreamClientContext,
  method: string,
  template: string,
  options: UpstreamRequestOptions,
): Promise<UpstreamResponse> {
  const read = READS.has(method) || options.read === true;
  const first = target(config.baseUrl, template, options);
  const record = (r: Omit<UpstreamRecord, 'upstream' | 'method' | 'path_template'>) => {
    const full: UpstreamRecord = {
      upstream: config.name,
      method,
      path_template: scrub(template.split('?')[0]!, config.secrets),
      ...r,
      path: scrub(r.path, config.secrets),
      ...(r.error ? { error: scrub(r.error, config.secrets).slice(0, 200) } : {}),
    };
    if (context.records.length < MAX_RECORDS) context.records.push(full);
    upstreams.recorded(full);
  };
  const refuse = (
    refused: UpstreamRecord['refused'] & string,
    path: string,
    text: string,
    status: number | null = null,
  ) => {
    record({ path, attempt: 1, status, bytes: 0, ms: 0, refused });
    return new UpstreamError(text, 'tool_error', status ?? undefined);
  };
  if (first.origin !== config.baseUrl.origin)
    throw refuse(
      'undeclared_host',
      `${first.host}${first.pathname}`,
      `The request to ${first.host} was refused: ${config.title} is ${config.baseUrl.host}, and this server may reach only the systems it declares. Nothing was sent.`,
    );
  if (context.readOnly && !read)
    throw refuse(
      'write_in_read_tool',
      first.pathname,
      `${method} to ${config.title} was refused: this call may only read; a change to another system is made after approval, from the outbox. Nothing was sent.`,
    );

  const headers: Record<string, string> = {
    ...Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
    ...(options.json !== undefined ? { 'content-type': 'application/json' } : {}),
    ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
  };
  if (config.auth.type === 'header') headers[config.auth.header] = config.auth.value;
  const body = options.json !== undefined ? JSON.stringify(options.json) : undefined;

  for (let attempt = 1; ; attempt++) {
    try {
      return await traced(config, method, first, headers, (sent) =>
        once(upstreams, config, context, method, first, sent, body, attempt, record),
      );
    } catch (err) {
      const retryable = err instanceof Retryable;
      if (!retryable) throw err;
      const delay = 100 * 2 ** (attempt - 1);
      if (!read || attempt > config.retries || context.signal.aborted) throw err.final;
      // A retry only while the call has time for it: the call's own limit aborts the sleep.
      try {
        await sleep(delay, undefined, { signal: context.signal });
      } catch {
        throw context.signal.reason as Error;
      }
    }
  }
}

/**
 * One attempt as a client span (`GET`, with the upstream's name and host; never its path, which may
 * name a customer), carrying the trace context to the upstream in `traceparent`. Untraced: the attempt
 * as it is, its headers untouched.
 */
function traced(
  config: UpstreamConfig,
  method: string,
  url: URL,
  headers: Record<string, string>,
  attempt: (headers: Record<string, string>) => Promise<UpstreamResponse>,
): Promise<UpstreamResponse> {
  if (!activeSpan()) return attempt(headers);
  const attributes = {
    'http.request.method': method,
    'server.address': url.hostname,
    'bulkhead.upstream.name': config.name,
  };
  return inSpan(method, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const sent = { ...headers };
    injectTraceHeaders(sent);
    const res = await attempt(sent);
    span.setAttribute('http.response.status_code', res.status);
    return res;
  });
}

/** A failure a read may retry; `final` is what the handler gets when no retry is left. */
class Retryable extends Error {
  constructor(readonly final: UpstreamError) {
    super(final.message);
  }
}

/** How an attempt ended: the upstream's status, the bytes read, and why it was refused or failed. */
type AttemptRecord = Pick<UpstreamRecord, 'status' | 'bytes' | 'refused' | 'error'>;

/**
 * The record of one attempt, written once however it ends (a redirect hop apart), at the path the
 * attempt is at when it ends. When the call stops (time limit, cancellation) it is written at once,
 * before the call's event is, since the request's own rejection arrives a moment later.
 */
function attemptLog(
  context: UpstreamClientContext,
  attempt: number,
  path: () => string,
  record: (r: Omit<UpstreamRecord, 'upstream' | 'method' | 'path_template'>) => void,
) {
  const started = performance.now();
  let done = false;
  const ms = () => Math.round(performance.now() - started);
  const finish = (r: AttemptRecord) => {
    done = true;
    record({ path: path(), attempt, ms: ms(), ...r });
  };
  const onCallAbort = () => {
    if (!done) finish({ status: null, bytes: 0, error: 'aborted: the call was stopped' });
  };
  context.signal.addEventListener('abort', onCallAbort, { once: true });
  return {
    /** Whether the attempt is recorded already (the call stopped while it ran). */
    get done() {
      return done;
    },
    finish,
    /** A redirect followed: its hop is recorded, and the attempt goes on. */
    hop: (status: number) => record({ path: path(), attempt, status, bytes: 0, ms: ms() }),
    /** A failure after the call stopped is the call's own (time limit or cancellation), already recorded. */
    stopped: (err: unknown) =>
      context.signal.aborted ? (context.signal.reason as Error) : done ? err : null,
    close: () => context.signal.removeEventListener('abort', onCallAbort),
  };
}

async function once(
  upstreams: Upstreams,
  config: UpstreamConfig,
  context: UpstreamClientContext,
  method: string,
  first: URL,
  headers: Record<string, string>,
  body: string | undefined,
  attempt: number,
  record: (r: Omit<UpstreamRecord, 'upstream' | 'method' | 'path_template'>) => void,
): Promise<UpstreamResponse> {
  const own = AbortSignal.timeout(config.timeoutMs);
  const signal = AbortSignal.any([context.signal, own]);
  const write = !READS.has(method);
  const title = capital(config.title);
  const nothing = write
    ? 'it may or may not have acted on the request; check before repeating it'
    : 'nothing was changed';
  let url = first;
  const log = attemptLog(context, attempt, () => url.pathname, record);
  try {
    for (let hop = 0; ; hop++) {
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, {
          method: method as Dispatcher.HttpMethod,
          headers: { ...headers, host: url.host },
          ...(body !== undefined ? { body } : {}),
          signal,
          dispatcher: upstreams.agent(config.name),
        });
      } catch (err) {
        const theirs = log.stopped(err);
        if (theirs) throw theirs;
        const failed = requestFailure(err, config, own.aborted, nothing);
        log.finish({ status: null, bytes: 0, ...failed.record });
        throw failed.error;
      }
      const status = res.statusCode;
      if (status >= 300 && status < 400 && res.headers.location) {
        await res.body.dump().catch(() => {});
        const next = new URL(String(res.headers.location), url);
        if (next.origin !== config.baseUrl.origin) {
          log.finish({ status, bytes: 0, refused: 'redirect_to_undeclared_host' });
          throw new UpstreamError(
            `${title} redirected the request to ${next.host}, which this server may not reach; the redirect was not followed.`,
            'tool_error',
            status,
          );
        }
        if (!write && hop < MAX_REDIRECTS) {
          log.hop(status);
          url = next;
          continue;
        }
      }
      const read = await readBody(res, config, own, nothing, log);
      if (log.done) throw context.signal.reason as Error;
      log.finish({ status, bytes: read.bytes });
      if (RETRY_STATUS.has(status))
        throw new Retryable(
          new UpstreamError(
            `${title} is unavailable (HTTP ${status}); ${nothing}. Try again later.`,
            'unavailable',
            status,
          ),
        );
      return upstreamResponse(res, read, `${config.name} ${method} ${url.pathname}`, config.secrets);
    }
  } finally {
    log.close();
  }
}

/** The answer's body, read up to the upstream's cap; one that breaks off, times out or is too large is recorded and thrown. */
async function readBody(
  res: Dispatcher.ResponseData,
  config: UpstreamConfig,
  own: AbortSignal,
  nothing: string,
  log: ReturnType<typeof attemptLog>,
): Promise<{ buffer: Buffer; bytes: number }> {
  const status = res.statusCode;
  let read: { buffer: Buffer; bytes: number; over: boolean };
  try {
    read = await readCapped(res.body, Number(res.headers['content-length'] ?? NaN), config.maxResponseBytes);
  } catch (err) {
    const theirs = log.stopped(err);
    if (theirs) throw theirs;
    const failed = bodyFailure(config, own.aborted, nothing);
    log.finish({ status, bytes: err instanceof BodyFailed ? err.bytes : 0, ...failed.record });
    throw failed.error;
  }
  if (read.over) {
    log.finish({ status, bytes: read.bytes, refused: 'too_large' });
    throw new UpstreamError(
      `${capital(config.title)} answered with more than ${bytesText(config.maxResponseBytes)} (its limit); the answer was cut and not used. Narrow the request.`,
      'tool_error',
      status,
    );
  }
  return read;
}

/** What failed before an answer came: the upstream's own time limit, a lost connection (both retried for reads), anything else. */
function requestFailure(
  err: unknown,
  config: UpstreamConfig,
  timedOut: boolean,
  nothing: string,
): { error: Error; record: Pick<UpstreamRecord, 'refused' | 'error'> } {
  const title = capital(config.title);
  if (timedOut)
    return {
      record: { refused: 'timeout' },
      error: new Retryable(
        new UpstreamError(
          `${title} did not answer within ${seconds(config.timeoutMs)}; ${nothing}. Try again later.`,
          'unavailable',
        ),
      ),
    };
  const code = (err as { code?: string }).code ?? '';
  const connection = CONNECTION_CODES.has(code);
  const why = connection ? code : /CERT|SSL|TLS|SIGNATURE/.test(code) ? `TLS: ${code}` : 'connection failed';
  const failure = new UpstreamError(
    `${title} could not be reached (${why}); ${nothing}. Try again later.`,
    'unavailable',
  );
  return { record: { error: code || String(err) }, error: connection ? new Retryable(failure) : failure };
}

/** What failed while the answer was read: the upstream's own time limit, or the answer broken off (both retried for reads). */
function bodyFailure(
  config: UpstreamConfig,
  timedOut: boolean,
  nothing: string,
): { error: Error; record: Pick<UpstreamRecord, 'refused' | 'error'> } {
  const title = capital(config.title);
  return {
    record: timedOut ? { refused: 'timeout' } : { error: 'body cut off' },
    error: new Retryable(
      new UpstreamError(
        timedOut
          ? `${title} did not finish its answer within ${seconds(config.timeoutMs)}; ${nothing}. Try again later.`
          : `${title} broke off its answer; ${nothing}. Try again later.`,
        'unavailable',
      ),
    ),
  };
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
