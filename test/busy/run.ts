/**
 * `pnpm test:busy [vitest arguments]`: the whole suite, as `pnpm test` runs it, while CPU hogs keep
 * every core busy — a laptop with a browser and an IDE open, or a shared CI runner. One hog per core
 * (at least two; `BULKHEAD_BUSY_HOGS` to choose), each a `node` process spinning `for (;;) {}` in a
 * worker thread. The hogs end with the suite, and on their own when this script goes away (their
 * stdin closes), so a killed run leaves none behind. Prints the load average it saw and how long the
 * suite took; exits with the suite's exit code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';

const HOG = `
const { Worker } = require('node:worker_threads');
new Worker('for (;;) {}', { eval: true });
process.stdin.on('end', () => process.exit(0)).on('close', () => process.exit(0)).resume();
`;

function hogCount(): number {
  const given = process.env.BULKHEAD_BUSY_HOGS;
  if (given === undefined) return Math.max(2, availableParallelism());
  const n = Number(given);
  if (!Number.isInteger(n) || n < 0 || n > 64) {
    process.stderr.write(`BULKHEAD_BUSY_HOGS: a whole number from 0 to 64, not "${given}"\n`);
    process.exit(2);
  }
  return n;
}

/** vitest's command, as `pnpm test` runs it (the root package's own dependency). */
const VITEST = new URL('../../node_modules/vitest/vitest.mjs', import.meta.url).pathname;

const hogs: ChildProcess[] = [];
const stopHogs = () => {
  for (const hog of hogs) if (hog.exitCode === null && hog.signalCode === null) hog.kill('SIGKILL');
};
process.on('exit', stopHogs);
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    stopHogs();
    process.exit(130);
  });

const count = hogCount();
for (let i = 0; i < count; i++)
  hogs.push(spawn(process.execPath, ['-e', HOG], { stdio: ['pipe', 'ignore', 'inherit'] }));
process.stderr.write(`test:busy: ${count} CPU hogs on ${availableParallelism()} cores; running the suite\n`);

const samples: number[] = [];
const sampler = setInterval(() => samples.push(loadavg()[0]!), 15_000);
const started = Date.now();
const suite = spawn(process.execPath, [VITEST, 'run', ...args()], {
  stdio: 'inherit',
  env: process.env,
});
suite.once('exit', (code, signal) => {
  clearInterval(sampler);
  stopHogs();
  samples.push(loadavg()[0]!);
  const seconds = Math.round((Date.now() - started) / 1000);
  const avg = samples.reduce((a, b) => a + b, 0) / samples.length;
  process.stderr.write(
    `test:busy: the suite took ${seconds} s under ${count} hogs; 1-minute load average ` +
      `${Math.min(...samples).toFixed(1)}–${Math.max(...samples).toFixed(1)} (mean ${avg.toFixed(1)}) ` +
      `on ${availableParallelism()} cores\n`,
  );
  process.exit(code ?? (signal ? 1 : 0));
});

/** The arguments for vitest: this script's, without a literal `--` that pnpm 12 passes on. */
function args(): string[] {
  return process.argv.slice(2).filter((a) => a !== '--');
}
