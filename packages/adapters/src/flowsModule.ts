/**
 * Loading a flows module: the file (or folder with an `index`) that
 * `baton serve <flows-module>` names. Its flows are the default export (an
 * array of flows, or one flow) plus every named export that is a flow, with
 * duplicates dropped; an optional named export `expose` (a `FlowExposure`
 * or a function of the flow) says which flows are also prompts or resources.
 * Paths resolve against the working directory. A `.js` or `.mjs` module
 * loads natively; a TypeScript one (`.ts`, `.mts`, `.cts`, `.tsx`) loads
 * through tsx, whose hooks are registered on first need unless tsx already
 * runs the process (`pnpm -s baton` in the repository, `node --import tsx`).
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Flow } from '@baton/engine';
import type { FlowExposure } from './registerFlows.js';

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

let typescriptHooks: Promise<void> | undefined;

/**
 * Make `import()` load TypeScript: register tsx's module hooks once. tsx's own
 * loader marks the process with this global when it already runs it; were the
 * mark missing, registering a second time still works.
 */
function loadTypeScript(): Promise<void> {
  if ((globalThis as Record<symbol, unknown>)[Symbol.for('tsx:global-cjs-loader-count')] !== undefined) {
    return Promise.resolve();
  }
  typescriptHooks ??= import('tsx/esm/api').then(({ register }) => {
    register();
  });
  return typescriptHooks;
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

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
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
    if (TYPESCRIPT.test(path)) await loadTypeScript();
    exports = await import(pathToFileURL(path).href);
  } catch (error) {
    throw new Error(`cannot load flows module ${path}: ${firstLine(error)}`);
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
