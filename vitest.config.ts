import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Packs and npm-installs the packages (minutes): run by `pnpm test:consumer` after the suite.
    exclude: ['**/node_modules/**', 'test/consumer.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Three files at a time: vitest's default on 2 cores is one (cores - 1), and most files wait on
    // child processes, timers and sockets more than they compute (measured on 9 e2e files, 2 cores:
    // 121 s with 1, 68 s with 2, 53 s with 3, 48 s with 4 workers; 4 inflates each test's time by a third).
    maxWorkers: 3,
    // A throwaway PostgreSQL for the store's tests (skipped when BATON_TEST_PG_URL is set), and the
    // build of the packages the tests run the CLI from (packages/*/dist-test/).
    globalSetup: ['packages/store/test/setup/postgres.ts', 'test/setup/builtPackages.ts'],
    reporters: ['default'],
  },
});
