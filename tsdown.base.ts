/**
 * What every published Baton package's build shares (each package's
 * `tsdown.config.ts` adds its entry points): every module of `src/` to ESM
 * JavaScript (`dist/**\/*.mjs`) for Node 20.19, with `.d.mts` declarations and
 * source maps, one output file per source file (unbundled), so `dist/` keeps
 * `src/`'s layout and the packages' `publishConfig.exports` can name files in it.
 */
import type { UserConfig } from 'tsdown';

export const packageBuild = {
  format: 'esm',
  platform: 'node',
  target: 'node20.19',
  unbundle: true,
  dts: true,
  sourcemap: true,
  clean: true,
} satisfies UserConfig;
