import pino, { type Logger } from 'pino';
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
