import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { prettyFactory } from 'pino-pretty';

/** How `start` shows the servers' log lines: pretty on a terminal, as a server run by itself does; else JSON. */
export type LogFormat = 'pretty' | 'json';

/** The format for lines written to `stream` (the CLI's stderr). */
export function relayFormat(stream: { isTTY?: boolean }): LogFormat {
  return stream.isTTY ? 'pretty' : 'json';
}

/** Where `start` writes every line its servers print, stack traces included: `<data dir>/logs/`. */
export function logDir(dataDir: string): string {
  return join(dataDir, 'logs');
}

/** A frame of a stack trace as Node prints one (`    at fn (file:1:2)`). */
const FRAME = /^\s+at \S/;

/** An error-like value without its stack (the rest of it stays on the terminal). */
function withoutStack(value: unknown): unknown {
  if (!value || typeof value !== 'object' || !('stack' in value)) return value;
  const { stack: _stack, ...rest } = value as Record<string, unknown>;
  return rest;
}

/**
 * Renders one line of a server's output for the terminal: a pino line without the stacks of the errors
 * it carries (they stay in the log file), pretty on one line in the `pretty` format; a frame of a
 * stack trace printed outside the logger is left out (null); any other line as it is.
 */
export function createLineRenderer(format: LogFormat, colorize: boolean): (line: string) => string | null {
  const pretty =
    format === 'pretty'
      ? prettyFactory({
          colorize,
          singleLine: true,
          // An error is an object like any other here: on one line, its stack left to the log file.
          errorLikeObjectKeys: [],
          ignore: 'pid,hostname,name',
          translateTime: 'SYS:HH:MM:ss',
        })
      : undefined;
  return (line) => {
    if (FRAME.test(line)) return null;
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return line;
    }
    if (!entry || typeof entry !== 'object' || typeof entry.level !== 'number') return line;
    const shown = Object.fromEntries(Object.entries(entry).map(([k, v]) => [k, withoutStack(v)]));
    return pretty ? pretty(shown).trimEnd() : JSON.stringify(shown);
  };
}

/** The log file of one deployable under a start: written afresh at each start, every line as printed. */
export function openLogFile(dataDir: string, name: string): WriteStream {
  mkdirSync(logDir(dataDir), { recursive: true, mode: 0o700 });
  return createWriteStream(join(logDir(dataDir), `${name}.log`), { flags: 'w', mode: 0o600 });
}
