/** Where a command writes; tests pass buffers, the binary passes the process streams. */
export interface Io {
  out(line: string): void;
  err(line: string): void;
  /** Progress on stderr, overwritten in place on a TTY. */
  progress(line: string): void;
}

export function processIo(): Io {
  const tty = Boolean(process.stderr.isTTY);
  let pending = false;
  return {
    out: (line) => {
      if (pending) process.stderr.write('\n');
      pending = false;
      process.stdout.write(`${line}\n`);
    },
    err: (line) => {
      if (pending) process.stderr.write('\n');
      pending = false;
      process.stderr.write(`${line}\n`);
    },
    progress: (line) => {
      if (tty) {
        process.stderr.write(`\r\x1b[2K${line}`);
        pending = true;
      } else process.stderr.write(`${line}\n`);
    },
  };
}

/** A usage mistake: printed with the command's help hint, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** A refusal or failure the operator can fix: printed as is, exit code 1. */
export class CliError extends Error {
  override readonly name = 'CliError';
}
