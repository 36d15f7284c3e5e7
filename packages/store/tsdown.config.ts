/**
 * How `@baton/store` is built for npm: every module of `src/` to ESM
 * JavaScript (`dist/**\/*.mjs`) with `.d.mts` declarations and source maps,
 * one output file per source file (unbundled). Keeping `src/`'s layout keeps
 * `dist/core/migrations.mjs` two folders below the package root, where it
 * finds the shipped drizzle-kit migrations (`drizzle/`). The drivers
 * (better-sqlite3, pg) are peer dependencies and stay external.
 */
import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/memory/index.ts', 'src/better-sqlite3/index.ts', 'src/node-postgres/index.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  unbundle: true,
  dts: true,
  sourcemap: true,
  clean: true,
});
