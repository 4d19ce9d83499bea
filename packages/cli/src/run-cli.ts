import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The `bulkhead` binary as users run it: the launcher and its bundle (built by the tests' global setup).
const bin = fileURLToPath(new URL('../bin/bulkhead.mjs', import.meta.url));

/** What one CLI run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the real `bulkhead` binary as a child process (for tests), in `cwd` (default: the test's). */
export function runCli(
  args: string[],
  env: Record<string, string | undefined> = {},
  cwd?: string,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      ...(cwd ? { cwd } : {}),
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
