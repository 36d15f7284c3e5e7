/**
 * Vitest global setup: builds `@baton/engine`, `@baton/store` and
 * `@baton/adapters` into each package's `dist-test/` (the packages' own tsdown
 * configs, without declarations: about two seconds for the three, side by
 * side), so the tests spawn the CLI as plain `node` on built JavaScript, as a
 * user runs it from npm, instead of transpiling the sources through tsx in
 * every process. The CLI runs with the export condition `baton-test-build`
 * (`--conditions`, see {@link BUILT_CONDITION}), under which the workspace
 * packages' `exports` name `dist-test/`: the CLI and a flows module it loads
 * (a `.ts` file in the tests or examples importing `@baton/engine`) share one
 * built copy of each package. Without the condition (vitest itself, tsc,
 * `pnpm -s baton`) the packages still resolve to `src/`. It always builds (a
 * run tests the sources as they are); `dist-test/` is git-ignored and apart
 * from `dist/`, which `pnpm pack` (the consumer test) rebuilds and may clean
 * while this run's processes use `dist-test/`.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The export condition under which the workspace packages resolve to `dist-test/`. */
export const BUILT_CONDITION = 'baton-test-build';
/** The packages the CLI loads. */
const PACKAGES = ['engine', 'store', 'adapters'] as const;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Build one package into its `dist-test/`; rejects with tsdown's output when it fails. */
function build(name: (typeof PACKAGES)[number]): Promise<void> {
  const cwd = `${ROOT}packages/${name}`;
  const child = spawn(
    `${cwd}/node_modules/.bin/tsdown`,
    ['--out-dir', 'dist-test', '--no-dts', '--log-level', 'warn'],
    {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0) resolve();
      else reject(new Error(`building @baton/${name} into dist-test/ failed (tsdown exited with ${code}):\n${output}`));
    });
  });
}

export default async function setup(): Promise<void> {
  await Promise.all(PACKAGES.map(build));
}
