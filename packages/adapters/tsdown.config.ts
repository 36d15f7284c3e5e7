/**
 * How `@baton/adapters` is built for npm: every module of `src/` to ESM
 * JavaScript (`dist/**\/*.mjs`) with `.d.mts` declarations and source maps,
 * one output file per source file (unbundled), so the `baton` command
 * (`dist/cli/main.mjs`, shebang kept) still loads each subcommand only when
 * named, and the inspect page finds its static files in `dist/inspect/assets`.
 */
import { defineConfig } from 'tsdown';

export default defineConfig({
  entry: ['src/index.ts', 'src/cli/main.ts'],
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  unbundle: true,
  dts: true,
  sourcemap: true,
  clean: true,
  copy: [{ from: 'src/inspect/assets', to: 'dist/inspect' }],
});
