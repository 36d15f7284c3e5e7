/**
 * `baton` loading flows modules in a CommonJS project, made the way
 * `npm init -y` makes one (`"type": "commonjs"`), in a folder outside the
 * workspace that finds the packages through a linked node_modules: a `.ts`,
 * a `.cts`, a `.js` written with `require`, and a `.mts` all load
 * (`baton diagram` draws their flow). A flows module that does not parse is
 * one line naming the file, line and column with the compiler's message,
 * without a stack, whatever its form (TypeScript through tsx's esbuild, a
 * CommonJS `.js`, an ES module `.mjs` whose place Node itself drops).
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runCli } from './helpers/mcpClients.js';

const FLOW_TS = `import { ask, defineFlow, defineInputs, form, step } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

const charge = step('charge', async ({ idempotencyKey }: { idempotencyKey: string }) => idempotencyKey);
const inputs = defineInputs({ confirm: form({ message: 'Charge?', schema: z.object({ confirm: z.boolean() }) }) });
const machine = setup({ actors: { charge } }).createMachine({
  id: 'charge_order',
  initial: 'confirming',
  states: {
    confirming: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'charging' } },
    charging: { invoke: { id: 'charge', src: 'charge', onDone: 'charged' } },
    charged: { type: 'final' },
  },
});
export const chargeOrder = defineFlow({ name: 'charge_order', description: 'Charge', args: z.object({}), inputs, machine });
`;

const FLOW_JS = `const { ask, defineFlow, defineInputs, form, step } = require('@baton/engine');
const { setup } = require('xstate');
const { z } = require('zod');

const charge = step('charge', async ({ idempotencyKey }) => idempotencyKey);
const inputs = defineInputs({ confirm: form({ message: 'Charge?', schema: z.object({ confirm: z.boolean() }) }) });
const machine = setup({ actors: { charge } }).createMachine({
  id: 'charge_order',
  initial: 'confirming',
  states: {
    confirming: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'charging' } },
    charging: { invoke: { id: 'charge', src: 'charge', onDone: 'charged' } },
    charged: { type: 'final' },
  },
});
module.exports = [defineFlow({ name: 'charge_order', description: 'Charge', args: z.object({}), inputs, machine })];
`;

/** A CommonJS `.js` flows module that does not parse. */
const SYNTAX_JS = 'const z = require("zod");\nexports.a = { b: 1;\n';

let project: string;

/** Write `file` into its own folder of the project (tsx would map a \`.js\` to a \`.ts\` beside it); its path. */
function place(name: string, text: string): string {
  const folder = join(project, name.replace('.', '-'));
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, name), text);
  return join(folder, name);
}

/**
 * `baton serve <path>` fails with one line naming the module and the place in it (`where`), no
 * stack, exit 1; `from`: the built CLI on plain Node (as installed), or the sources through tsx.
 */
async function expectLoadErrorAt(path: string, where: string, from: 'build' | 'sources' = 'build') {
  const result = await runCli(['serve', path, '--http', '127.0.0.1:0'], {}, undefined, from);
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines.at(-1)).toBe(`baton: cannot load flows module ${path}: ${path}${where}`);
  expect(result.stderr).not.toMatch(/\bat .+:\d+:\d+/);
  expect(result.code).toBe(1);
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'baton-cjs-project-'));
  writeFileSync(
    join(project, 'package.json'),
    `${JSON.stringify({ name: 'flows', version: '1.0.0', main: 'index.js', license: 'ISC', type: 'commonjs' }, null, 2)}\n`,
  );
  symlinkSync(join(ROOT, 'test/node_modules'), join(project, 'node_modules'));
});
afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

describe('a CommonJS project: every form of flows module loads', () => {
  it.each([
    ['flows.ts', FLOW_TS],
    ['flows.cts', FLOW_TS],
    ['flows.mts', FLOW_TS],
    ['flows.js', FLOW_JS],
  ])('baton diagram %s', async (name, text) => {
    const result = await runCli(['diagram', place(name, text), 'charge_order']);
    expect(result.stderr).toBe('');
    expect(result.stdout).toContain('confirming --> charging : input.confirm');
    expect(result.code).toBe(0);
  });
});

describe('a flows module that does not parse: one line with file:line:column', () => {
  it.each([
    ['syntax.ts', 'import { z } from "zod";\nexport const a = { b: 1;\n', ':2:23: Expected "}" but found ";"'],
    ['syntax.mts', 'import { z } from "zod";\nexport const a = { b: 1;\n', ':2:23: Expected "}" but found ";"'],
    ['syntax.mjs', 'import { z } from "zod";\nexport const a = { b: 1;\n', ":2:24: Unexpected token ';'"],
  ])('baton serve %s', (name, text, where) => expectLoadErrorAt(place(name, text), where));
  // A CommonJS `.js`: plain Node (the CLI as installed) parses it itself; when tsx runs the process
  // (`pnpm -s baton` in the repository), tsx's loader compiles `.js` too and esbuild reports it.
  it('baton serve syntax.js (plain Node)', () =>
    expectLoadErrorAt(place('syntax.js', SYNTAX_JS), ":2:19: Unexpected token ';'"));
  it('baton serve syntax.js (run by tsx, as pnpm -s baton)', () =>
    expectLoadErrorAt(place('syntax.js', SYNTAX_JS), ':2:18: Expected "}" but found ";"', 'sources'));
});

describe('a flows module that throws while it loads: one line with the place that threw', () => {
  const THROWS_TS = `import { setup } from 'xstate';
export const machine = setup({}).createMachine({
  entry: assign({ n: 1 }),
});
`;
  const NO_DECIDER = `import { ask, decision, defineFlow, defineInputs } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

const inputs = defineInputs({ sign_off: decision({ message: 'Sign off?', schema: z.object({ ok: z.boolean() }) }) });
const machine = setup({}).createMachine({ initial: 'waiting', states: { waiting: { meta: ask(inputs, 'sign_off') } } });
export const release = defineFlow({ name: 'release', description: 'Release', args: z.object({}), inputs, machine });
`;
  it.each([
    ['throws.ts', THROWS_TS, ':3:10: assign is not defined'],
    ['throws.mjs', THROWS_TS, ':3:10: assign is not defined'],
    [
      'throws.js',
      THROWS_TS.replace("import { setup } from 'xstate';", "const { setup } = require('xstate');").replace(
        'export const machine =',
        'exports.machine =',
      ),
      ':3:10: assign is not defined',
    ],
    [
      'nodecider.ts',
      NO_DECIDER,
      ':7:24: flow "release": decision "sign_off" needs `role` or `may` to say who may decide',
    ],
  ])('baton serve %s', (name, text, where) => expectLoadErrorAt(place(name, text), where));
});
