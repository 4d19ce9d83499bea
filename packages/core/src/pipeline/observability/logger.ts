// The observability room: what a call leaves behind. logger (pino, secrets and URLs masked), tracing
// (OpenTelemetry spans), request-audit (the one owner of a request's audit event) and shown-url (a
// URL as a log may show it).
import pino, { type Logger } from 'pino';
import { withUrlsShown } from './shown-url.ts';
import { traceLogFields } from './tracing.ts';

export type { Logger } from 'pino';

/**
 * Paths whose values never reach a log line: authorization headers (either
 * case) and anything called token, secret or password, at the depths where
 * request objects and errors carry them.
 */
export const REDACT = [
  ...['authorization', 'Authorization'].flatMap((h) => [
    h,
    `*.${h}`,
    `*.headers.${h}`,
    `*.*.headers.${h}`,
    `headers.${h}`,
  ]),
  ...['token', 'secret', 'password', 'apiKey', 'api_key'].flatMap((k) => [
    k,
    `*.${k}`,
    `*.*.${k}`,
    `*.*.*.${k}`,
  ]),
];

/** A log line's fields with every URL in a text field (and an error's message and stack) shown without its credentials. */
function urlsShown(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(fields)) {
    let shown = value;
    if (typeof value === 'string') shown = withUrlsShown(value);
    else if (value instanceof Error || (value && typeof value === 'object' && 'message' in value)) {
      const e = value as { message?: unknown; stack?: unknown };
      if (typeof e.message === 'string' && e.message.includes('://'))
        shown = {
          ...e,
          message: withUrlsShown(e.message),
          ...(typeof e.stack === 'string' ? { stack: withUrlsShown(e.stack) } : {}),
        };
    }
    if (shown !== value) (out ??= { ...fields })[key] = shown;
  }
  return out ?? fields;
}

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  level?: string;
  name?: string;
  /** Write to stderr (stdio mode: stdout belongs to the protocol). */
  stderr?: boolean;
  /** Human-readable output; defaults to on when the destination is a TTY. */
  pretty?: boolean;
  /** Where the lines go instead of stdout or stderr (tests read them). */
  destination?: pino.DestinationStream;
}

/** The process's root logger: JSON by default, pretty on a TTY, secrets redacted. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const fd = options.stderr ? 2 : 1;
  const pretty = options.pretty ?? Boolean(fd === 2 ? process.stderr.isTTY : process.stdout.isTTY);
  const base = {
    level: options.level ?? 'info',
    ...(options.name ? { name: options.name } : {}),
    redact: { paths: REDACT, censor: '[redacted]' },
    // A URL or DSN in a line shows scheme, host, port and database only (a password may hold a `/`).
    formatters: { log: urlsShown },
    hooks: {
      logMethod(this: Logger, args: unknown[], method: (...a: unknown[]) => void) {
        method.apply(
          this,
          args.map((a) => (typeof a === 'string' ? withUrlsShown(a) : a)),
        );
      },
    },
    // Every line logged inside a traced request names its trace and span (nothing when untraced).
    mixin: traceLogFields,
  };
  if (options.destination) return pino(base, options.destination);
  if (pretty) {
    return pino(
      base,
      pino.transport({ target: 'pino-pretty', options: { destination: fd, colorize: true } }),
    );
  }
  return pino(base, pino.destination({ fd, sync: false }));
}

/**
 * `parent.child(bindings)`, made only when first used: most requests log nothing, and a child of a
 * redacting logger costs a pass of the redactor over its bindings.
 */
export function lazyChild(parent: Logger, bindings: Record<string, unknown>): Logger {
  let child: Logger | undefined;
  const real = () => (child ??= parent.child(bindings));
  return new Proxy({} as Logger, {
    get(_target, prop) {
      const value = Reflect.get(real(), prop) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(real()) : value;
    },
    set(_target, prop, value) {
      return Reflect.set(real(), prop, value);
    },
    has(_target, prop) {
      return Reflect.has(real(), prop);
    },
  });
}
