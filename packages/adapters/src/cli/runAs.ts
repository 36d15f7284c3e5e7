/**
 * How the user started `baton`, so help text and hints print commands that
 * work as typed: installed from npm (the CLI runs from a `node_modules`
 * folder), `npx baton`; in Baton's own repository (run from its sources),
 * `pnpm -s baton` (`-s`: no pnpm banner on stdout, which would corrupt
 * `--stdio`).
 */
import { fileURLToPath } from 'node:url';

/** The command that runs the CLI: `npx baton` when installed, `pnpm -s baton` in the repository. */
export function runAs(moduleUrl: string = import.meta.url): 'npx baton' | 'pnpm -s baton' {
  const path = moduleUrl.startsWith('file:') ? fileURLToPath(moduleUrl) : moduleUrl;
  return /[\\/]node_modules[\\/]/.test(path) ? 'npx baton' : 'pnpm -s baton';
}

/**
 * The closing line of a command's help: how to run `command` as started. Installed:
 * `Run it as "npx baton serve ..." (in a package.json script, "baton serve ...").`; in the
 * repository: `In the repository, run it as "pnpm -s baton serve ..." (without -s, pnpm prints
 * a banner on stdout, which corrupts --stdio).`
 */
export function runHint(command: string, moduleUrl: string = import.meta.url): string {
  return runAs(moduleUrl) === 'npx baton'
    ? `Run it as "npx baton ${command} ..." (in a package.json script, "baton ${command} ...").`
    : `In the repository, run it as "pnpm -s baton ${command} ..." (without -s, pnpm prints a banner on stdout,\nwhich corrupts --stdio).`;
}
