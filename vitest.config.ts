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
  },
});
