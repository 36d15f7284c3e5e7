/**
 * `baton serve` start-up and the CLI's help, through the real CLI (issue 22,
 * items 4 and 6). A fatal mistake is the only line on stderr, even where the
 * same start-up would have warned (no `BATON_KEYS`, flows left out for want
 * of a ledger): keys, the tokens file and the port are checked before the
 * flows module is loaded, and warnings are printed only once serving starts.
 * Typos of flags and commands get commander's "did you mean"; help prints
 * the command that fits how the CLI was started (`pnpm -s baton` here, in the
 * repository; `npx baton` from a `node_modules` folder).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { generateKey } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAs, runHint } from '../packages/adapters/src/cli/runAs.js';
import { runCli, startServe } from './helpers/mcpClients.js';

/** A flows module whose flows all need a ledger (served without one: a "not serving" warning each). */
const APPROVALS = 'examples/approvals';
let dir: string;
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'baton-startup-'));
  await writeFile(join(dir, 'tokens-bad.json'), '{ "token": 42 }');
  await writeFile(join(dir, 'throws.ts'), "throw new Error('flows module exploded');\n");
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken?.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

function onlyLine(result: { code: number | null; stderr: string }, code: number, pattern: RegExp): void {
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toEqual([expect.stringMatching(pattern)]);
  expect(result.code).toBe(code);
}

// Sequential: each case spawns the CLI, and a loaded machine starts few at a time.
describe('baton serve: a fatal start-up mistake is the only line', () => {
  const noKeys = { BATON_KEYS: undefined };

  it('a bad tokens file, where the start-up would warn about keys and left-out flows', async () => {
    const result = await runCli(
      ['serve', APPROVALS, '--http', '127.0.0.1:0', '--auth-tokens', join(dir, 'tokens-bad.json')],
      noKeys,
    );
    onlyLine(result, 1, /^baton: auth tokens file .*tokens-bad\.json: /);
  });

  it('a weak key, checked before the flows module is loaded (which would throw)', async () => {
    const zeros = Buffer.alloc(32).toString('base64url');
    const result = await runCli(['serve', join(dir, 'throws.ts'), '--http', '127.0.0.1:0'], { BATON_KEYS: zeros });
    onlyLine(result, 1, /^baton: BATON_KEYS: key 1 does not look random/);
  });

  it('a taken port, where the start-up would warn', async () => {
    const result = await runCli(['serve', APPROVALS, '--http', `127.0.0.1:${takenPort}`], noKeys);
    onlyLine(result, 1, new RegExp(`^baton: cannot listen on 127\\.0\\.0\\.1:${takenPort}: `));
  });

  it('an unsupported ledger URL, before the flows module is loaded', async () => {
    const result = await runCli(['serve', join(dir, 'throws.ts'), '--stdio', '--ledger', 'mysql://x'], {
      BATON_KEYS: generateKey(),
    });
    onlyLine(result, 1, /^baton: cannot open ledger: /);
  });

  it('a good start-up prints its warnings, then the serving line', async () => {
    const serve = await startServe([APPROVALS, '--http', '127.0.0.1:0'], { BATON_KEYS: '' });
    try {
      const lines = serve.stderr().trimEnd().split('\n');
      expect(lines.at(-1)).toMatch(/^baton: serving 2 flows at http:/);
      expect(lines.slice(0, -1).every((line) => line.startsWith('baton: warning: '))).toBe(true);
      expect(lines.some((line) => line.includes('BATON_KEYS is not set'))).toBe(true);
      expect(lines.some((line) => line.includes('not serving grant_temporary_access'))).toBe(true);
    } finally {
      await serve.stop();
    }
  });
});

describe('baton: typos get commander\'s "did you mean", one line, exit 2', () => {
  it.each([
    [['serv', 'x'], /^baton: unknown command "serv": did you mean serve\? \(commands: init, serve, call, /],
    [['serve', APPROVALS, '--htpp', '127.0.0.1:0'], /^baton: unknown option --htpp: did you mean --http\? \(usage: /],
    [
      ['call', 't', '--http', 'http://127.0.0.1:1/mcp', '--tokn', 'x'],
      /^baton: unknown option --tokn: did you mean --token\?/,
    ],
    [['serve', APPROVALS, '--http', '--stdio'], /^baton: --http needs a value \(usage: /],
  ])('baton %j', async (args, pattern) => {
    onlyLine(await runCli(args), 2, pattern);
  });
});

describe('help that fits how baton was started', () => {
  it('in the repository: pnpm -s baton', async () => {
    const [top, serve] = await Promise.all([runCli(['--help']), runCli(['serve', '--help'])]);
    expect(top.code).toBe(0);
    expect(top.stderr).toMatch(/^usage: pnpm -s baton <command> \[options\]$/m);
    expect(serve.code).toBe(0);
    expect(serve.stderr).toContain('In the repository, run it as "pnpm -s baton serve ..."');
    expect(serve.stderr).not.toContain('npx baton');
  });

  it('installed (run from node_modules): npx baton', () => {
    const installed = pathToFileURL('/home/me/shop/node_modules/@baton/adapters/dist/cli/main.mjs').href;
    expect(runAs(installed)).toBe('npx baton');
    expect(runHint('serve', installed)).toBe(
      'Run it as "npx baton serve ..." (in a package.json script, "baton serve ...").',
    );
    expect(runAs(pathToFileURL('/work/baton/packages/adapters/src/cli/main.ts').href)).toBe('pnpm -s baton');
  });
});
