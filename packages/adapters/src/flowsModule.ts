/**
 * Loading a flows module: the file (or folder with an `index`) that
 * `baton serve <flows-module>` names. Its flows are the default export (an
 * array of flows, or one flow) plus every named export that is a flow, with
 * duplicates dropped; an optional named export `expose` (a `FlowExposure`
 * or a function of the flow) says which flows are also prompts or resources.
 * Paths resolve against the working directory. The module is loaded the way
 * Node would run it: an ES module (`.mjs`, `.mts`, or `.js`/`.ts`/`.tsx` under a
 * package.json with `"type": "module"`) through `import()`, a CommonJS one
 * (`.cjs`, `.cts`, or `.js`/`.ts`/`.tsx` in any other package, as `npm init -y`
 * makes it) through `require()`. A TypeScript one loads through tsx, whose
 * hooks (ESM or CommonJS) are registered on first need unless tsx already runs
 * the process (`pnpm -s baton` in the repository, `node --import tsx`). A
 * CommonJS module may get its own copy of `@baton/engine`, which works with the
 * runner's (see the engine's `copies.ts`). A load error is one line: the
 * compiler's own message with its file:line:column, or for a module that throws
 * while it loads the error's first line with the file:line:column of the user's
 * code that threw, never a stack.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Flow } from '@baton/engine';
import type { FlowExposure } from './mcp/registerFlows.js';

/**
 * Whether a value is a flow made by `defineFlow`.
 *
 * @example `Object.values(await import('./flows.ts')).filter(isFlow)`
 */
export function isFlow(value: unknown): value is Flow {
  if (typeof value !== 'object' || value === null) return false;
  const flow = value as Partial<Record<keyof Flow, unknown>>;
  return (
    typeof flow.name === 'string' &&
    typeof flow.description === 'string' &&
    typeof flow.hash === 'string' &&
    typeof flow.toResult === 'function' &&
    typeof flow.machine === 'object' &&
    flow.machine !== null &&
    typeof flow.args === 'object' &&
    flow.args !== null &&
    typeof (flow.args as { safeParse?: unknown }).safeParse === 'function' &&
    typeof flow.inputs === 'object' &&
    flow.inputs !== null
  );
}

/** What a flows module provides. */
export interface FlowsModule {
  /** The absolute path that was loaded. */
  readonly path: string;
  readonly flows: readonly Flow[];
  readonly expose?: FlowExposure | ((flow: Flow) => FlowExposure);
}

const INDEX_FILES = ['index.ts', 'index.mts', 'index.js', 'index.mjs'];

const TYPESCRIPT = /\.(?:ts|mts|cts|tsx)$/;

let esmHooks: Promise<void> | undefined;
let cjsHooks: Promise<void> | undefined;

/** Whether tsx already runs this process (its loader marks the process with this global). */
function tsxRunsProcess(): boolean {
  return (globalThis as Record<symbol, unknown>)[Symbol.for('tsx:global-cjs-loader-count')] !== undefined;
}

/** Make `import()` load TypeScript: register tsx's ESM hooks once. */
function loadTypeScriptModules(): Promise<void> {
  if (tsxRunsProcess()) return Promise.resolve();
  esmHooks ??= import('tsx/esm/api').then(({ register }) => {
    register();
  });
  return esmHooks;
}

/** Make `require()` load TypeScript: register tsx's CommonJS hooks once. */
function requireTypeScript(): Promise<void> {
  if (tsxRunsProcess()) return Promise.resolve();
  cjsHooks ??= import('tsx/cjs/api').then(({ register }) => {
    register();
  });
  return cjsHooks;
}

/** How Node runs `path`: by its extension, else by the nearest package.json's `"type"`. */
async function formatOf(path: string): Promise<'module' | 'commonjs'> {
  if (/\.m[jt]s$/.test(path)) return 'module';
  if (/\.c[jt]s$/.test(path)) return 'commonjs';
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const manifest = await readFile(resolve(dir, 'package.json'), 'utf8').catch(() => undefined);
    if (manifest !== undefined) {
      try {
        return (JSON.parse(manifest) as { type?: unknown }).type === 'module' ? 'module' : 'commonjs';
      } catch {
        return 'commonjs';
      }
    }
    if (dirname(dir) === dir) return 'commonjs';
  }
}

/** The exports of a CommonJS module as an ES namespace would show them (`module.exports` as `default` too). */
function namespaceOf(required: unknown): Record<string, unknown> {
  if (typeof required !== 'object' || required === null || Array.isArray(required) || isFlow(required)) {
    return { default: required };
  }
  const exports = required as Record<string, unknown>;
  return 'default' in exports ? exports : { ...exports, default: required };
}

/**
 * Import (ES module) or require (CommonJS) the module at `path`, TypeScript included (also how
 * `baton serve` loads a `baton.config.ts`).
 */
export async function importModule(path: string): Promise<Record<string, unknown>> {
  const typescript = TYPESCRIPT.test(path);
  if ((await formatOf(path)) === 'module') {
    if (typescript) await loadTypeScriptModules();
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  }
  if (typescript) await requireTypeScript();
  return namespaceOf(createRequire(import.meta.url)(path));
}

async function resolveEntry(path: string): Promise<string> {
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new Error(`flows module ${path} does not exist`);
  if (!info.isDirectory()) return path;
  for (const name of INDEX_FILES) {
    const candidate = resolve(path, name);
    if (await stat(candidate).catch(() => undefined)) return candidate;
  }
  throw new Error(`flows module folder ${path} has no ${INDEX_FILES.join(', ')}`);
}

/** `<file>:<line>:<column>` from a V8 syntax error's banner (the place, the source line, a caret under the column). */
function placeOf(banner: string): string | undefined {
  const [place, , caret] = banner.split('\n');
  const at = /^(?:file:\/\/)?(.+):(\d+)$/.exec(place ?? '');
  if (!at) return undefined;
  const column = (caret ?? '').indexOf('^');
  return `${decodeURI(at[1]!)}:${at[2]}${column >= 0 ? `:${column + 1}` : ''}`;
}

/**
 * A syntax error with its place: V8 puts it at the top of a CommonJS module's stack; for an ES
 * module Node 20 drops it (and tsx's lexer, running the process, reports 1:1), so the entry file
 * is checked once more with `node --check`, which prints place and message.
 */
function syntaxErrorWithPlace(error: Error, path: string): string | undefined {
  const inStack = error instanceof SyntaxError ? placeOf(error.stack ?? '') : undefined;
  if (inStack) return `${inStack}: ${error.message.split('\n')[0]}`;
  if (TYPESCRIPT.test(path)) return undefined;
  const checked = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
  const place = checked.status === 0 ? undefined : placeOf(checked.stderr ?? '');
  const message = /^SyntaxError: .*$/m.exec(checked.stderr ?? '')?.[0].slice('SyntaxError: '.length);
  return place && message ? `${place}: ${message}` : undefined;
}

/**
 * A compiler message with the file it names as it is on disk: tsx hands esbuild a `.mts` or
 * `.cts` file as `.ts` (and `.mjs` as `.js`), so esbuild names one that may not exist.
 */
function realFileOf(line: string): string {
  const at = /^(.+)\.([tj])s(:\d+:\d+: )/.exec(line);
  if (!at || existsSync(`${at[1]}.${at[2]}s`)) return line;
  const real = ['m', 'c'].map((kind) => `${at[1]}.${kind}${at[2]}s`).find((file) => existsSync(file));
  return real ? `${real}${line.slice(at[1]!.length + 3)}` : line;
}

/**
 * What went wrong loading `path`, on one line and without a stack: the compiler's messages with
 * their file:line:column (esbuild's "Transform failed with N errors:" is only a heading), Node's
 * own syntax error with its place, else the error's first line after the place in the user's code
 * that threw it.
 */
function describeLoadError(error: unknown, path: string): string {
  const message = error instanceof Error ? error.message : String(error);
  const lines = message.split('\n').filter((line) => line.trim() !== '');
  if (/^Transform failed with \d+ errors?:$/.test(lines[0] ?? '') && lines.length > 1) {
    return lines
      .slice(1)
      .map((line) => realFileOf(line.replace(/: ERROR: /, ': ')))
      .join('; ');
  }
  const first = lines[0] ?? message;
  if (error instanceof SyntaxError || (error instanceof Error && first.startsWith('Parse error '))) {
    return syntaxErrorWithPlace(error, path) ?? first;
  }
  const thrownAt = error instanceof Error ? userFrameOf(error.stack ?? '') : undefined;
  return thrownAt ? `${thrownAt}: ${first}` : first;
}

/** Where Baton's own packages live (their frames are not the place a user looks for). */
const BATON_PACKAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The `file:line:column` of the first stack frame in the user's code (not Node's, not a
 * dependency's, not Baton's): where a flows module threw while loading (`assign is not defined`,
 * or `defineFlow` refusing a definition, at the line that called it).
 */
function userFrameOf(stack: string): string | undefined {
  for (const line of stack.split('\n')) {
    const frame = /^\s+at (?:.*\()?((?:file:\/\/)?[^()\s]+):(\d+):(\d+)\)?$/.exec(line);
    if (!frame) continue;
    const file = frame[1]!.startsWith('file://') ? fileURLToPath(frame[1]!) : frame[1]!;
    if (!isAbsolute(file) || file.includes(`${sep}node_modules${sep}`) || file.startsWith(BATON_PACKAGES + sep)) {
      continue;
    }
    return `${file}:${frame[2]}:${frame[3]}`;
  }
  return undefined;
}

/**
 * Load a flows module.
 *
 * @example
 * ```ts
 * // flows.ts
 * import type { Flow } from '@baton/engine';
 * import { deployProduction } from './deployProduction.js';
 * import { expenseApproval } from './expenseApproval.js';
 *
 * export default [deployProduction, expenseApproval];
 * export const expose = (flow: Flow) => ({ tool: true, prompt: flow.name === 'expense_approval' });
 * ```
 * @throws Error with a one-line message when the module is missing, fails to load, or exports no flow.
 */
export async function loadFlowsModule(specifier: string, cwd = process.cwd()): Promise<FlowsModule> {
  const path = await resolveEntry(resolve(cwd, specifier));
  let exports: Record<string, unknown>;
  try {
    exports = await importModule(path);
  } catch (error) {
    throw new Error(`cannot load flows module ${path}: ${describeLoadError(error, path)}`);
  }
  const flows: Flow[] = [];
  const add = (value: unknown) => {
    if (isFlow(value) && !flows.includes(value)) flows.push(value);
  };
  const fallback = exports.default;
  if (Array.isArray(fallback)) fallback.forEach(add);
  else add(fallback);
  for (const [name, value] of Object.entries(exports)) if (name !== 'default') add(value);
  if (flows.length === 0) {
    throw new Error(`flows module ${path} exports no flow (export default [flowA, flowB], or export each flow)`);
  }
  const expose = exports.expose;
  if (expose !== undefined && typeof expose !== 'function' && (typeof expose !== 'object' || expose === null)) {
    throw new Error(`flows module ${path}: "expose" must be an object or a function of the flow`);
  }
  return { path, flows, ...(expose !== undefined ? { expose: expose as FlowsModule['expose'] } : {}) };
}
