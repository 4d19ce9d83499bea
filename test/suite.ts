/**
 * The suite's own command, as `pnpm test` and `pnpm test:busy` run it: vitest (the root package's
 * own dependency) with the arguments given, its exit code passed on as it is.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';

const VITEST = new URL('../node_modules/vitest/vitest.mjs', import.meta.url).pathname;

/** Starts `vitest run` with `args`, less a literal `--` that pnpm 12 passes on, sharing this terminal. */
export function startSuite(args: string[]): ChildProcess {
  return spawn(process.execPath, [VITEST, 'run', ...args.filter((a) => a !== '--')], {
    stdio: 'inherit',
    env: process.env,
  });
}

/** A finished process's exit code as a shell reports it: its own, or 128 plus its signal's number. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}
