/**
 * How `@baton/store` is built for npm: the shared package build
 * (`tsdown.base.ts`) from its four entry points. Keeping `src/`'s layout keeps
 * `dist/core/migrations.mjs` two folders below the package root, where it
 * finds the shipped drizzle-kit migrations (`drizzle/`). The drivers
 * (better-sqlite3, pg) are peer dependencies and stay external.
 */
import { defineConfig } from 'tsdown';
import { packageBuild } from '../../tsdown.base.js';

export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/memory/index.ts', 'src/better-sqlite3/index.ts', 'src/node-postgres/index.ts'],
});
