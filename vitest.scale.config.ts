import { defineConfig } from 'vitest/config';

// `pnpm test:scale` (test/scale/run.ts): the tests that set up PgBouncer, HAProxy and Patroni from
// the system packages, one file at a time (they measure, and each starts many processes).
const report = process.env.BULKHEAD_TEST_REPORT;

export default defineConfig({
  test: {
    ...(report ? { reporters: ['default', 'json'], outputFile: { json: report } } : {}),
    include: ['test/scale/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
