import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    // Packs and npm-installs the packages (minutes): run by `pnpm test:consumer` after the suite.
    exclude: ['**/node_modules/**', 'test/consumer.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A throwaway PostgreSQL for the store's tests (skipped when BATON_TEST_PG_URL is set), and the
    // build of the packages the tests run the CLI from (packages/*/dist-test/).
    globalSetup: ['packages/store/test/setup/postgres.ts', 'test/setup/builtPackages.ts'],
    reporters: ['default'],
  },
});
