import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// CI asks for a JSON report beside the usual output (its closing line counts from it).
const report = process.env.BULKHEAD_TEST_REPORT;

export default defineConfig({
  test: {
    ...(report ? { reporters: ['default', 'json'], outputFile: { json: report } } : {}),
    include: [
      'packages/*/src/**/*.test.{ts,tsx}',
      'servers/*/src/**/*.test.{ts,tsx}',
      'apps/*/src/**/*.test.{ts,tsx}',
      'infra/**/*.test.ts',
      'test/**/*.test.ts',
    ],
    // test/scale runs on its own: `pnpm test:scale` (vitest.scale.config.ts).
    exclude: ['**/node_modules/**', 'test/scale/**'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two files at a time even on two cores (vitest's default is one fewer worker than cores): a file
    // spends most of its time waiting on PostgreSQL, child processes and sockets, not on the CPU.
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
