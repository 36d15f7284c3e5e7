/**
 * How `@baton/adapters` is built for npm: the shared package build
 * (`tsdown.base.ts`) from the library entry and the `baton` command
 * (`dist/cli/main.mjs`, shebang kept), which still loads each subcommand only
 * when named; the inspect page's static files are copied to `dist/inspect/assets`.
 */
import { defineConfig } from 'tsdown';
import { packageBuild } from '../../tsdown.base.js';

export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/cli/main.ts'],
  copy: [{ from: 'src/inspect/assets', to: 'dist/inspect' }],
});
