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
import { exitCodeOf, startSuite } from '../suite.ts';
import { prepareSystem } from '../system.ts';

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

// What the suite needs from the system, as `pnpm test` checks it, before any hog starts.
const refusal = prepareSystem(process.env.BULKHEAD_TEST_SYSTEM, (line) =>
  process.stderr.write(`test:busy: ${line}\n`),
);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}

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
const suite = startSuite(process.argv.slice(2));
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
  process.exit(exitCodeOf(code, signal));
});
