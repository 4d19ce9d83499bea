/**
 * `pnpm test [vitest arguments]`: the whole suite, or the files and tests named. First what the suite
 * needs from the system (test/system.ts): present, or installed from Debian's packages as root, or
 * else one sentence saying what to install and nothing run. Then vitest, whose exit code this exits
 * with: a failed test fails the command, whichever database the run used.
 */
import { exitCodeOf, startSuite } from './suite.ts';
import { prepareSystem } from './system.ts';

// The runner's one environment read: whether to check the system first.
const refusal = prepareSystem(process.env.BULKHEAD_TEST_SYSTEM, (line) =>
  process.stderr.write(`pnpm test: ${line}\n`),
);
if (refusal) {
  process.stderr.write(`${refusal}\n`);
  process.exit(1);
}

const suite = startSuite(process.argv.slice(2));
// Ctrl-C reaches vitest itself (the same process group), which stops and reports: this waits for it.
process.on('SIGINT', () => {});
// A signal sent to this process alone is passed on.
for (const signal of ['SIGTERM', 'SIGHUP'] as const) process.on(signal, () => suite.kill(signal));
suite.once('exit', (code, signal) => process.exit(exitCodeOf(code, signal)));
