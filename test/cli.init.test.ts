/**
 * `baton init [dir]`, run the documented way from the repository
 * (`pnpm -s baton init <dir>`): it creates a missing folder and writes the
 * starter (package.json with the @baton/* versions of the running adapters
 * package, the template files, `.gitignore`), prints the next two commands,
 * refuses in one line (exit 1) to overwrite any existing file unless
 * `--force`, and answers bad flags in one line (exit 2). The starter's own
 * tests (`npm test` there) pass against the workspace's packages; the
 * starter installed with npm from the packed tarballs is in
 * `test/consumer.test.ts`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './helpers/mcpClients.js';

const TEMPLATES = join(ROOT, 'packages/adapters/templates/starter');
const ADAPTERS = JSON.parse(readFileSync(join(ROOT, 'packages/adapters/package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
};
const WRITTEN = [
  'package.json',
  'flows.ts',
  'flows.test.ts',
  'baton.config.ts',
  'tsconfig.json',
  'README.md',
  '.gitignore',
];

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'baton-init-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Run a command to completion (bounded: 60 s). */
function run(command: string, args: readonly string[], cwd: string) {
  const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `pnpm -s baton init ...` from the repository root. */
const init = (...args: string[]) => run('pnpm', ['-s', 'baton', 'init', ...args], ROOT);

function expectOneLine(result: { code: number | null; stdout: string; stderr: string }, code: number, pattern: RegExp) {
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^baton: /);
  expect(lines[0]).toMatch(pattern);
  expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  expect(result.stdout).toBe('');
  expect(result.code).toBe(code);
}

describe('baton init', () => {
  it('creates the folder, writes the starter and prints the next two commands', async () => {
    const target = join(dir, 'new', 'My Starter');
    const ran = await init(target);
    expect(ran.stderr).toBe('');
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain(`wrote a starter project in '${target}': ${WRITTEN.join(', ')}`);
    expect(ran.stdout).toContain(`cd '${target}' && npm install && npm test\n  npm run serve\n`);
    for (const name of WRITTEN) expect(existsSync(join(target, name)), name).toBe(true);

    for (const name of ['flows.ts', 'flows.test.ts', 'tsconfig.json', 'README.md']) {
      expect(readFileSync(join(target, name), 'utf8'), name).toBe(readFileSync(join(TEMPLATES, name), 'utf8'));
    }
    expect(readFileSync(join(target, '.gitignore'), 'utf8').split('\n')).toEqual(
      expect.arrayContaining(['node_modules/', '*.db', '*.db-wal', '*.db-shm']),
    );

    const manifest = JSON.parse(readFileSync(join(target, 'package.json'), 'utf8'));
    const baton = `^${ADAPTERS.version}`;
    expect(manifest).toMatchObject({
      name: 'my-starter',
      private: true,
      type: 'module',
      scripts: {
        serve: 'baton serve',
        test: 'node --import tsx --test --test-reporter=spec flows.test.ts',
        typecheck: 'tsc --noEmit',
      },
      dependencies: {
        '@baton/adapters': baton,
        '@baton/engine': baton,
        '@baton/store': baton,
        'better-sqlite3': expect.stringMatching(/^\^12\./),
        xstate: ADAPTERS.dependencies.xstate,
        zod: ADAPTERS.dependencies.zod,
      },
      devDependencies: { tsx: ADAPTERS.dependencies.tsx, typescript: expect.any(String), '@types/node': '^20.19.0' },
    });
  });

  it('refuses in one line to overwrite an existing file, and writes nothing', async () => {
    const target = join(dir, 'taken');
    mkdirSync(target);
    writeFileSync(join(target, 'flows.ts'), '// mine\n');
    expectOneLine(
      await init(target),
      1,
      /already has flows\.ts; nothing was written \(baton init --force overwrites it\)$/,
    );
    expect(readFileSync(join(target, 'flows.ts'), 'utf8')).toBe('// mine\n');
    expect(existsSync(join(target, 'package.json'))).toBe(false);
  });

  it('overwrites with --force', async () => {
    const target = join(dir, 'forced');
    mkdirSync(target);
    writeFileSync(join(target, 'flows.ts'), '// mine\n');
    writeFileSync(join(target, 'notes.txt'), 'kept\n');
    const ran = await init(target, '--force');
    expect(ran.code).toBe(0);
    expect(readFileSync(join(target, 'flows.ts'), 'utf8')).toBe(readFileSync(join(TEMPLATES, 'flows.ts'), 'utf8'));
    expect(readFileSync(join(target, 'notes.txt'), 'utf8')).toBe('kept\n');
    for (const name of WRITTEN) expect(existsSync(join(target, name)), name).toBe(true);
  });

  it.each([
    [['--bogus'], 2, /unknown option --bogus \(usage: baton init \[dir\] \[--force\]\)$/],
    [['a', 'b'], 2, /init takes one folder, got 2/],
    [['package.json'], 1, /package\.json exists and is not a folder$/],
    // No folder: the current one (pnpm runs the script at the repository root, which has a package.json).
    [[], 1, /^baton: \. already has package\.json, .*; nothing was written \(baton init --force overwrites them\)$/],
  ])('baton init %j: one line, exit %i', async (args, code, pattern) => {
    expectOneLine(await init(...args), code, pattern);
  });

  it('prints its usage with --help', async () => {
    const ran = await init('--help');
    expect(ran.code).toBe(0);
    expect(ran.stderr).toContain('usage: baton init [dir] [--force]');
  });

  it("the starter's own tests pass against the workspace's packages", async () => {
    // Inside the repository, so that @baton/*, xstate, zod and tsx resolve from its node_modules.
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    const target = mkdtempSync(join(ROOT, '.tmp', 'init-'));
    try {
      expect((await init(target)).code).toBe(0);
      const ran = await run('npm', ['test'], target);
      expect(ran.stdout, ran.stderr).toMatch(/^ℹ pass 6$/m);
      expect(ran.stdout).toMatch(/^ℹ fail 0$/m);
      expect(ran.code).toBe(0);
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  });
});
