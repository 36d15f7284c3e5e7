/**
 * How `@baton/adapters` is built for npm: the shared package build
 * (`tsdown.base.ts`) from the library entry and the `baton` command
 * (`dist/cli/main.mjs`, shebang kept), which still loads each subcommand only
 * when named; the inspect page's static files are copied to `inspect/assets` of the output folder.
 */
import { join } from 'node:path';
import { defineConfig } from 'tsdown';
import { packageBuild } from '../../tsdown.base.js';

export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/cli/main.ts'],
  // Into the output folder, wherever it is (`--out-dir`: the tests' build, test/setup/builtPackages.ts).
  copy: ({ outDir }) => [{ from: 'src/inspect/assets', to: join(outDir, 'inspect') }],
});
