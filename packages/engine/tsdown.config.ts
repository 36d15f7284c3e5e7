/**
 * How `@baton/engine` is built for npm: every module of `src/` to ESM
 * JavaScript (`dist/**\/*.mjs`) with `.d.mts` declarations and source maps,
 * one output file per source file (unbundled) so paths stay as in `src/`.
 * The package's `publishConfig.exports` points at these files.
 */
import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/testing/index.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  unbundle: true,
  dts: true,
  sourcemap: true,
  clean: true,
});
