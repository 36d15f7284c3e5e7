/**
 * The root README's quick start, followed in a new CommonJS project (issue 35,
 * item 11): a folder whose package.json is what `npm init -y` writes
 * (`"type": "commonjs"`, no `"type": "module"`), holding the README's own
 * `flows.ts`, `flows.test.ts` and `tsconfig.json` as the README prints them.
 * Without any workaround, the README's test script passes (`node --import tsx
 * --test`), `tsc --noEmit` type-checks, and the README's `baton serve` and
 * `baton call` serve the flow and run it to its result. The folder sits under
 * the repository's `.tmp/` so that `@baton/*` resolve to the workspace
 * packages, as they would from the project's own `node_modules`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateKey } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli, type ServeProcess, startServe } from './helpers/mcpClients.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The README's fenced block that follows `marker`. */
function snippet(marker: RegExp): string {
  const match = new RegExp(`${marker.source}[\\s\\S]*?\`\`\`\\w*\\n([\\s\\S]*?)\`\`\``).exec(README);
  if (!match) throw new Error(`README.md has no snippet after ${marker}`);
  return match[1]!;
}

let dir: string;

beforeAll(() => {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  dir = mkdtempSync(join(ROOT, '.tmp', 'quickstart-cjs-'));
  // What `npm init -y` writes (npm 10+), plus the README's `npm pkg set scripts.test=...`.
  const test = /npm pkg set scripts\.test="([^"]+)"/.exec(README)?.[1];
  expect(test, 'the README sets a test script').toBeDefined();
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'my-flows', version: '1.0.0', main: 'index.js', type: 'commonjs', scripts: { test } }),
  );
  writeFileSync(join(dir, 'flows.ts'), snippet(/<!-- file: flows\.ts -->/));
  writeFileSync(join(dir, 'flows.test.ts'), snippet(/## Test/));
  writeFileSync(join(dir, 'tsconfig.json'), snippet(/and a `tsconfig\.json`/));
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Run a command in the project folder: its exit code and output. */
function inProject(command: string, args: readonly string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

describe('the README quick start in a new CommonJS project', () => {
  it('asks for no "type": "module"', () => {
    expect(README).not.toMatch(/npm pkg set type=module/);
  });

  it('its test script passes and tsc type-checks, as written', async () => {
    const script = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts.test as string;
    const [node, ...args] = script.split(' ');
    expect(node).toBe('node');
    const tested = await inProject(process.execPath, args);
    expect(tested.code, tested.output).toBe(0);
    expect(tested.output).toMatch(/# pass 1/);
    const checked = await inProject(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit']);
    expect(checked.code, checked.output).toBe(0);
  }, 120_000);

  describe('baton serve and baton call, as the README says', () => {
    let serve: ServeProcess;
    const env = { BATON_KEYS: generateKey() };
    beforeAll(async () => {
      serve = await startServe(
        [join(dir, 'flows.ts'), '--http', '127.0.0.1:0', '--ledger', `sqlite:${join(dir, 'baton.db')}`],
        env,
      );
    }, 90_000);
    afterAll(async () => {
      await serve?.stop();
    });

    it('serves the flow (loaded as CommonJS) and baton call runs it to its result', async () => {
      const called = await runCli(
        ['call', 'deploy', '--args', '{"version":"1.2.3"}', '--http', serve.url.href],
        env,
        'y\n',
      );
      expect(called.code, called.stderr).toBe(0);
      expect(called.stdout).toContain('Deployed 1.2.3');
    }, 60_000);
  });
});
