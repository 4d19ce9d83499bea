import { defineConfig } from 'vitest/config';
import suite from './vitest.config.ts';

// The suite's own configuration (global setup, pool) for the fixtures of test/harness.test.ts, which
// runs `pnpm test` on them; the suite's include globs leave them out.
export default defineConfig({
  ...suite,
  test: { ...suite.test, include: ['test/harness/*.fixture.ts'] },
});
