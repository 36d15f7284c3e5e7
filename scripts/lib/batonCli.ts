/**
 * How the conformance harnesses start the `baton` CLI: from its sources through tsx (`sources`,
 * what a contributor's `pnpm conformance` runs), or from the test build in
 * `packages/adapters/dist-test` (`built`, which the test suite's global setup writes once, so
 * that no process pays tsx's start-up). The harnesses take it as `--cli sources|built` and hand
 * it to the processes the suite starts (the client command) in {@link CLI_ENV}.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCES = join(ROOT, 'packages', 'adapters', 'src', 'cli', 'main.ts');
const BUILT = join(ROOT, 'packages', 'adapters', 'dist-test', 'cli', 'main.mjs');

/** Where the CLI runs from. */
export type CliFrom = 'sources' | 'built';

/** The environment variable that carries {@link CliFrom} to the processes the suite starts. */
export const CLI_ENV = 'BATON_CONFORMANCE_CLI';

/** `--cli`'s value, checked: `built` needs the test build to exist. */
export function cliFrom(value: string | undefined): CliFrom {
  const from = value ?? 'sources';
  if (from !== 'sources' && from !== 'built') throw new Error(`--cli takes sources or built, got ${from}`);
  if (from === 'built' && !existsSync(BUILT)) {
    throw new Error(`--cli built: ${BUILT} is missing (the test suite's global setup builds it); use --cli sources`);
  }
  return from;
}

/** The arguments of `node` (`process.execPath`) that run `baton`, before the command's own. */
export function batonNodeArgs(from: CliFrom): string[] {
  return from === 'built' ? ['--conditions=baton-test-build', BUILT] : ['--import', 'tsx', SOURCES];
}
