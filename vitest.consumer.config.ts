/**
 * The consumer test alone (`pnpm test:consumer`, the last step of
 * scripts/test.sh): it packs the three packages and installs them with npm
 * into a temporary project, then into the starter `npx baton init` writes
 * (better-sqlite3 through a loopback prebuild mirror of the workspace's own
 * build: test/helpers/prebuildMirror.ts), about a minute and a half in all,
 * so it runs after the main suite instead of beside it.
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
