/**
 * `baton init [dir]`: write a starter project into `dir` (default: the
 * current folder, created when missing), so that `npm install && npm test`
 * then `npm run serve` give a tested, served flow. The files come from
 * `templates/starter/` of this package (shipped with it) plus a
 * `package.json` built here (its `serve` script is a bare `baton serve`, which
 * reads the starter's `baton.config.ts`), whose `@baton/*` dependencies are the version of
 * the running `@baton/adapters` and whose xstate, zod, tsx and better-sqlite3
 * ranges are the ones this package itself declares. Nothing is written when
 * any of the files already exists, unless `--force`.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join, normalize, resolve } from 'node:path';
import { CliError, oneLine, usageError } from './cliError.js';
import { parseFlags } from './parseFlags.js';

/** The command's synopsis, as `--help`, usage errors and the README show it. */
export const USAGE = 'baton init [dir] [--force]';

const HELP = `usage: ${USAGE}

Write a starter project into dir (default: the current folder; created when missing):
package.json, flows.ts (a two-round flow), flows.test.ts (its tests, with @baton/engine/testing),
baton.config.ts (what \`baton serve\` serves, and how), tsconfig.json, README.md and .gitignore. Then:

  cd dir && npm install && npm test
  npm run serve

  --force    overwrite files that already exist (without it, nothing is written)
`;

/** The flags the command parses (node:util `parseArgs` options); the README documents each. */
export const OPTIONS = {
  force: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The template folder shipped with the package (`src/cli` and `dist/cli` are both two levels down). */
const TEMPLATES = new URL('../../templates/starter/', import.meta.url);
const PACKAGE_JSON = new URL('../../package.json', import.meta.url);

/** Files copied from the templates: name in the template folder -> name written (npm drops a shipped `.gitignore`). */
const TEMPLATE_FILES: Record<string, string> = {
  'flows.ts': 'flows.ts',
  'flows.test.ts': 'flows.test.ts',
  'baton.config.ts': 'baton.config.ts',
  'tsconfig.json': 'tsconfig.json',
  'README.md': 'README.md',
  gitignore: '.gitignore',
};

interface AdaptersManifest {
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** A range from this package's manifest; `workspace:` ranges (inside the repository) become `^version`. */
function rangeOf(manifest: AdaptersManifest, name: string, fallback: string): string {
  const range = manifest.dependencies?.[name] ?? manifest.peerDependencies?.[name];
  return range === undefined || range.startsWith('workspace:') ? fallback : range;
}

/** An npm package name from a folder name: lower case, URL-safe, else `baton-starter`. */
export function packageName(dir: string): string {
  const name = basename(dir)
    .toLowerCase()
    .replace(/[^a-z0-9._~-]+/g, '-')
    .replace(/^[._-]+|[-]+$/g, '');
  return name === '' || name === 'node_modules' ? 'baton-starter' : name.slice(0, 214);
}

/** The starter's `package.json`. */
export function starterManifest(manifest: AdaptersManifest, name: string): object {
  const baton = `^${manifest.version}`;
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=20.19' },
    scripts: {
      serve: 'baton serve',
      call: `baton call publish_release --args "{\\"version\\":\\"1.2.3\\"}" --http http://127.0.0.1:3000/mcp`,
      test: 'node --import tsx --test --test-reporter=spec flows.test.ts',
      typecheck: 'tsc --noEmit',
    },
    dependencies: {
      '@baton/adapters': baton,
      '@baton/engine': baton,
      '@baton/store': baton,
      'better-sqlite3': rangeOf(manifest, 'better-sqlite3', '^12.6.2'),
      xstate: rangeOf(manifest, 'xstate', '^5.33.0'),
      zod: rangeOf(manifest, 'zod', '^4.2.0'),
    },
    devDependencies: {
      '@types/node': '^20.19.0',
      tsx: rangeOf(manifest, 'tsx', '^4.23.15'),
      typescript: '^5.9.3',
    },
  };
}

/** How to refer to the folder in a command typed in the current folder: as the user named it, quoted for a shell when needed. */
function shown(typed: string): string {
  const path = normalize(typed).replace(/(.)\/+$/, '$1');
  return /^[\w./@+-]+$/.test(path) ? path : `'${path.replaceAll("'", "'\\''")}'`;
}

/** Run `baton init`; resolves to the exit code. */
export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, OPTIONS, USAGE);
  if (values.help) {
    process.stderr.write(HELP);
    return 0;
  }
  if (positionals.length > 1) throw usageError(`init takes one folder, got ${positionals.length}`, USAGE);
  const typed = positionals[0] ?? '.';
  const dir = resolve(typed);
  const info = await stat(dir).catch(() => undefined);
  if (info && !info.isDirectory()) throw new CliError(`${shown(typed)} exists and is not a folder`);

  const manifest = JSON.parse(await readFile(PACKAGE_JSON, 'utf8')) as AdaptersManifest;
  const files: [string, string][] = [
    ['package.json', `${JSON.stringify(starterManifest(manifest, packageName(dir)), null, 2)}\n`],
  ];
  for (const [template, name] of Object.entries(TEMPLATE_FILES)) {
    const text = await readFile(new URL(template, TEMPLATES), 'utf8').catch((error) => {
      throw new CliError(`the starter template ${template} is missing from @baton/adapters: ${oneLine(error)}`);
    });
    files.push([name, text]);
  }

  const existing = files.map(([name]) => name).filter((name) => existsSync(join(dir, name)));
  if (existing.length > 0 && !values.force) {
    const list = existing.join(', ');
    throw new CliError(
      `${shown(typed)} already has ${list}; nothing was written (baton init --force overwrites ${existing.length === 1 ? 'it' : 'them'})`,
    );
  }

  await mkdir(dir, { recursive: true });
  for (const [name, text] of files) await writeFile(join(dir, name), text);

  const where = shown(typed);
  process.stdout.write(
    `baton: wrote a starter project in ${where}: ${files.map(([name]) => name).join(', ')}\n\nNext:\n  ${
      where === '.' ? '' : `cd ${where} && `
    }npm install && npm test\n  npm run serve\n`,
  );
  return 0;
}
