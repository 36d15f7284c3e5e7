/**
 * The consumer test alone (`pnpm test:consumer`, the last step of
 * scripts/test.sh): it packs the three packages and installs them with npm
 * into a temporary project (building better-sqlite3 from source, which a
 * loopback prebuild mirror then hands to the starter `npx baton init` writes),
 * about two minutes in all, so it runs after the main suite instead of beside it.
 */
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/consumer.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 15 * 60_000,
    pool: 'forks',
    reporters: ['default'],
  },
});
