import { setTimeout as sleep } from 'node:timers/promises';
import { request, type Dispatcher } from 'undici';
import type { Outcome } from '@bulkhead/audit';
import { ToolError } from '../tool-definition/errors.ts';
import { untrusted, type UntrustedText } from '../text-safety/untrusted/wrap.ts';
import type { UpstreamConfig, UpstreamRecord, Upstreams } from './upstreams.ts';
import { activeSpan, injectTraceHeaders, inSpan, SpanKind } from '../observability/tracing.ts';

/** A request the kit refused or an upstream that failed, as a sentence naming the system; the call answers `isError`. */
export class UpstreamError extends ToolError {
  constructor(
    message: string,
    /** `unavailable` for a system that is down or too slow, `tool_error` for a refusal by the kit. */
    readonly outcome: Extract<Outcome, 'unavailable' | 'tool_error'>,
    /** The upstream's status, when it answered. */
    readonly statusCode?: number,
  ) {
    super(message);
  }
}

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

/** An upstream's answer, read whole (up to the upstream's cap). */
export interface UpstreamResponse {
  status: number;
  ok: boolean;
  headers: Record<string, string>;
  bytes: number;
  /** The body as text, marked untrusted (its source names the upstream and the path): data, never instructions. */
  text(): UntrustedText;
  /** The body parsed as JSON; free text taken from it goes through `untrusted()` before it reaches a result. */
  json<T = unknown>(): T;
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

/** How many times a path parameter is percent-decoded to find a dot segment (`%252e` is `%2e` is `.`). */
const DECODE_ROUNDS = 3;

/**
 * Whether `value` is `.` or `..`, as written or percent-encoded (`%2e`, `%2E%2e`, `.%2e`, `%252e`, …):
 * a value the URL parser, or an upstream that decodes once more, resolves as a step in the path.
 */
export function isDotSegment(value: string): boolean {
  let v = value;
  for (let round = 0; ; round++) {
    if (v === '.' || v === '..') return true;
    if (round === DECODE_ROUNDS || !v.includes('%')) return false;
    try {
      const decoded = decodeURIComponent(v);
      if (decoded === v) return false;
      v = decoded;
    } catch {
      return false; // malformed escapes decode to no dot segment
    }
  }
}

/** The URL a path names under the upstream's base URL: a path is appended to the base path; an absolute URL is taken as given (and checked). */
function target(base: URL, template: string, options: UpstreamRequestOptions): URL {
  const filled = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, key: string) => {
    const value = options.params?.[key];
    if (value === undefined) throw new Error(`upstream path ${template}: no value for {${key}}`);
    // A path parameter is one path segment: `..` would climb out of the path the tool names
    // (`/silence/{id}/x` with id `..` is `/x`), so it, `.` and their encoded forms are refused.
    if (isDotSegment(String(value)))
      throw new UpstreamError(
        `${key} ${JSON.stringify(String(value))} is not a valid value: in ${template} it would be read as a step in the path, not as {${key}} itself. Nothing was sent.`,
        'tool_error',
      );
    return encodeURIComponent(String(value));
  });
  const url = /^[a-z][a-z0-9+.-]*:/i.test(filled)
    ? new URL(filled)
    : new URL(`${base.pathname.replace(/\/+$/, '')}/${filled.replace(/^\/+/, '')}`, base);
  for (const [k, v] of Object.entries(options.query ?? {})) {
    if (v === undefined) continue;
    url.searchParams.delete(k);
    for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(k, String(item));
  }
  return url;
}

/** Text with any of `secrets` replaced: what the kit records and says never carries a credential. */
function scrub(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[secret]');
  return out;
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
  const started = performance.now();
  const own = AbortSignal.timeout(config.timeoutMs);
  const signal = AbortSignal.any([context.signal, own]);
  const write = !READS.has(method);
  const title = capital(config.title);
  const nothing = write
    ? 'it may or may not have acted on the request; check before repeating it'
    : 'nothing was changed';
  let url = first;
  let done = false;
  /** Records this request once (a redirect hop apart), however it ends. */
  const finish = (
    r: Pick<UpstreamRecord, 'status' | 'bytes'> & Pick<UpstreamRecord, 'refused' | 'error'>,
  ) => {
    done = true;
    record({ path: url.pathname, attempt, ms: Math.round(performance.now() - started), ...r });
  };
  // The call stopped (time limit, cancellation): the record is written at once, before the call's
  // event is, since the request's own rejection arrives a moment later.
  const onCallAbort = () => {
    if (!done) finish({ status: null, bytes: 0, error: 'aborted: the call was stopped' });
  };
  /** A failure after the call stopped is the call's own (time limit or cancellation), already recorded. */
  const stopped = (err: unknown) =>
    context.signal.aborted ? (context.signal.reason as Error) : done ? err : null;
  context.signal.addEventListener('abort', onCallAbort, { once: true });
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
        const theirs = stopped(err);
        if (theirs) throw theirs;
        const failed = requestFailure(err, config, own.aborted, nothing);
        finish({ status: null, bytes: 0, ...failed.record });
        throw failed.error;
      }
      const status = res.statusCode;
      if (status >= 300 && status < 400 && res.headers.location) {
        await res.body.dump().catch(() => {});
        const next = new URL(String(res.headers.location), url);
        if (next.origin !== config.baseUrl.origin) {
          finish({ status, bytes: 0, refused: 'redirect_to_undeclared_host' });
          throw new UpstreamError(
            `${title} redirected the request to ${next.host}, which this server may not reach; the redirect was not followed.`,
            'tool_error',
            status,
          );
        }
        if (!write && hop < MAX_REDIRECTS) {
          record({
            path: url.pathname,
            attempt,
            status,
            bytes: 0,
            ms: Math.round(performance.now() - started),
          });
          url = next;
          continue;
        }
      }
      let read: { buffer: Buffer; bytes: number; over: boolean };
      try {
        read = await readCapped(
          res.body,
          Number(res.headers['content-length'] ?? NaN),
          config.maxResponseBytes,
        );
      } catch (err) {
        const theirs = stopped(err);
        if (theirs) throw theirs;
        const failed = bodyFailure(config, own.aborted, nothing);
        finish({ status, bytes: err instanceof BodyFailed ? err.bytes : 0, ...failed.record });
        throw failed.error;
      }
      if (read.over) {
        finish({ status, bytes: read.bytes, refused: 'too_large' });
        throw new UpstreamError(
          `${title} answered with more than ${bytesText(config.maxResponseBytes)} (its limit); the answer was cut and not used. Narrow the request.`,
          'tool_error',
          status,
        );
      }
      if (done) throw context.signal.reason as Error;
      finish({ status, bytes: read.bytes });
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
    context.signal.removeEventListener('abort', onCallAbort);
  }
}

/**
 * The answer as a handler gets it: its text marked untrusted, naming `source`, and — text, JSON and
 * headers alike — with the upstream's own credentials replaced by `[secret]` before anything sees it
 * (an upstream that echoes the token it was sent must not hand it to a model or a log).
 */
function upstreamResponse(
  res: Dispatcher.ResponseData,
  read: { buffer: Buffer; bytes: number },
  source: string,
  secrets: readonly string[],
): UpstreamResponse {
  const body = scrub(read.buffer.toString('utf8'), secrets);
  return {
    status: res.statusCode,
    ok: res.statusCode >= 200 && res.statusCode < 300,
    headers: Object.fromEntries(
      Object.entries(res.headers).map(([k, v]) => [
        k,
        scrub(Array.isArray(v) ? v.join(', ') : String(v ?? ''), secrets),
      ]),
    ),
    bytes: read.bytes,
    text: () => untrusted(body, { source }),
    // Parsed, then scrubbed again: a secret JSON-escaped in the text (`\/`, `\u…`) is plain once parsed.
    json: <T>() => scrubDeep(JSON.parse(body), secrets) as T,
  };
}

/** `value` with `secrets` replaced in every string of it, keys included. */
function scrubDeep(value: unknown, secrets: readonly string[]): unknown {
  if (!secrets.length) return value;
  if (typeof value === 'string') return scrub(value, secrets);
  if (Array.isArray(value)) return value.map((v) => scrubDeep(v, secrets));
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [scrub(k, secrets), scrubDeep(v, secrets)]),
    );
  return value;
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

/** A body that failed while it was read, with how much had come. */
class BodyFailed extends Error {
  constructor(
    readonly bytes: number,
    cause: unknown,
  ) {
    super('the body could not be read', { cause });
  }
}

/**
 * Reads a body up to `max` bytes: all of it, or (`over`) as far as the cap, where reading stops and
 * the connection is dropped, so that an answer far past the cap is never read whole. A body that
 * declares a length past the cap is not read at all.
 */
async function readCapped(
  body: Dispatcher.ResponseData['body'],
  declared: number,
  max: number,
): Promise<{ buffer: Buffer; bytes: number; over: boolean }> {
  if (declared > max) {
    body.destroy();
    return { buffer: Buffer.alloc(0), bytes: 0, over: true };
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > max) {
        body.destroy();
        return { buffer: Buffer.alloc(0), bytes, over: true };
      }
      chunks.push(chunk);
    }
  } catch (err) {
    throw new BodyFailed(bytes, err);
  }
  return { buffer: Buffer.concat(chunks), bytes, over: false };
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
