/**
 * How `@baton/engine` is built for npm: the shared package build
 * (`tsdown.base.ts`) from its two entry points, `.` and `./testing`.
 */
import { defineConfig } from 'tsdown';
import { packageBuild } from '../../tsdown.base.js';

export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/testing/index.ts'],
});
