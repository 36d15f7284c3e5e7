/**
 * `defineFlow`: what an author writes. A flow is a name, a description, a zod
 * schema for its arguments, an input catalog and an XState v5 machine whose
 * `input` is the parsed arguments. Defining a flow checks everything that can
 * be checked before the first request (argument schema shape, every asked key
 * in the catalog) and computes the definition hash that guards persisted
 * states against a changed machine.
 */
import { createHash } from 'node:crypto';
import type { AnyStateMachine, InputFrom, OutputFrom } from 'xstate';
import { z } from 'zod';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { FlowResult } from '../contract/outcome.js';
import { FlowDefinitionError } from '../errors.js';
import type { Flow, FlowApp, FlowConfig } from './flowTypes.js';
import { machineGraph } from './graph.js';
import type { InputCatalog } from './inputs/catalog.js';
import { decisionProblems, isDecision } from './inputs/decision.js';
import { isEvent } from './inputs/event.js';
import { stepOf } from './steps.js';

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function defaultResult(output: unknown): FlowResult {
  if (output === undefined) return { content: [{ type: 'text', text: 'done' }] };
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }] };
  if (output && typeof output === 'object' && !Array.isArray(output)) {
    return {
      content: [{ type: 'text', text: JSON.stringify(output) }],
      structuredContent: output as Record<string, unknown>,
    };
  }
  return { content: [{ type: 'text', text: JSON.stringify(output) }] };
}

/** Every key asked by `meta.ask` anywhere in the machine, with the state id asking it (from {@link machineGraph}). */
export function askedKeysByState(machine: AnyStateMachine): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const node of machineGraph(machine).nodes) {
    if (node.asks.length > 0)
      found.set(
        node.id,
        node.asks.map((ask) => ask.key),
      );
  }
  return found;
}

function definitionHash(machine: AnyStateMachine, inputs: InputCatalog, args: z.ZodObject): string {
  const fn = (_key: string, value: unknown) => (typeof value === 'function' ? `fn:${value.toString()}` : value);
  const definition = JSON.parse(JSON.stringify(machine.definition, fn));
  const catalog = Object.fromEntries(Object.entries(inputs).map(([key, spec]) => [key, spec.shape]));
  const material = canonicalJson({ definition, catalog, args: z.toJSONSchema(args, { unrepresentable: 'any' }) });
  return createHash('sha256').update(material).digest().subarray(0, 16).toString('base64url');
}

/**
 * Define a flow.
 *
 * @example
 * ```ts
 * import { ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
 * import { setup } from 'xstate';
 * import { z } from 'zod';
 *
 * const inputs = defineInputs({ confirm: form({ message: 'Deploy?', schema: z.object({ confirm: z.boolean() }) }) });
 * const machine = setup({
 *   types: { input: {} as { version: string }, events: {} as InputEvents<typeof inputs>, output: {} as { message: string } },
 * }).createMachine({
 *   initial: 'asking',
 *   states: {
 *     asking: { meta: ask(inputs, 'confirm'), on: { 'input.confirm': 'done' } },
 *     done: { type: 'final', output: { message: 'Deployed' } },
 *   },
 * });
 *
 * export const deploy = defineFlow({
 *   name: 'deploy_production',
 *   description: 'Deploy a version to production after confirmation',
 *   args: z.object({ version: z.string().min(1) }),
 *   inputs,
 *   machine,
 *   result: (out) => out.message,
 * });
 * ```
 * @throws FlowDefinitionError on a bad name, a non-object args schema, a decision without `role` or `may`,
 *   a state asking a key the catalog lacks, a state that both asks its caller and awaits a decision, an
 *   `inputSchema` that is not an object schema, or a completer for an argument `args` does not have.
 */
export function defineFlow<
  TMachine extends AnyStateMachine,
  TInputs extends InputCatalog,
  TArgs extends z.ZodType<InputFrom<TMachine>> = z.ZodType<InputFrom<TMachine>>,
>(config: FlowConfig<TMachine, TInputs> & { args: TArgs }): Flow<TMachine, TInputs, z.input<TArgs>> {
  if (!NAME.test(config.name)) {
    throw new FlowDefinitionError(`flow name "${config.name}" must be 1-64 characters of [A-Za-z0-9_.-]`);
  }
  if (!(config.args instanceof z.ZodObject)) {
    throw new FlowDefinitionError(`flow "${config.name}": args must be a z.object({...})`);
  }
  for (const problem of decisionProblems(config.inputs)) {
    throw new FlowDefinitionError(`flow "${config.name}": ${problem}`);
  }
  for (const [stateId, keys] of askedKeysByState(config.machine)) {
    for (const key of keys) {
      if (!(key in config.inputs)) {
        throw new FlowDefinitionError(
          `flow "${config.name}": state "${stateId}" asks "${key}", which is not in its inputs catalog`,
        );
      }
    }
    const awaited = keys.filter((key) => isDecision(config.inputs[key]) || isEvent(config.inputs[key]));
    if (awaited.length > 0 && awaited.length < keys.length) {
      const asked = keys.filter((key) => !awaited.includes(key));
      throw new FlowDefinitionError(
        `flow "${config.name}": state "${stateId}" both asks its caller (${asked.join(', ')}) and awaits ${awaited.some((key) => isEvent(config.inputs[key])) ? 'an event' : 'a decision'} (${awaited.join(', ')}): split it into two states`,
      );
    }
  }
  const decisions = Object.keys(config.inputs).filter((key) => isDecision(config.inputs[key]));
  const events = Object.keys(config.inputs).filter((key) => isEvent(config.inputs[key]));
  const steps: string[] = [];
  for (const logic of Object.values(config.machine.implementations.actors ?? {})) {
    const declared = stepOf(logic);
    if (!declared) continue;
    if (steps.includes(declared.id)) {
      throw new FlowDefinitionError(`flow "${config.name}": two steps are named "${declared.id}"`);
    }
    steps.push(declared.id);
  }
  const args = config.args as z.ZodObject;
  const completers = { ...(config.complete ?? {}) };
  for (const [name, completer] of Object.entries(completers)) {
    if (!(name in args.shape)) {
      throw new FlowDefinitionError(`flow "${config.name}": complete.${name} names no argument of its args`);
    }
    if (typeof completer !== 'function') {
      throw new FlowDefinitionError(`flow "${config.name}": complete.${name} must be a function`);
    }
  }
  const inputSchema = config.inputSchema;
  if (
    inputSchema !== undefined &&
    (typeof inputSchema !== 'object' ||
      inputSchema === null ||
      Array.isArray(inputSchema) ||
      inputSchema.type !== 'object')
  ) {
    throw new FlowDefinitionError(`flow "${config.name}": inputSchema must be a JSON Schema object with type "object"`);
  }
  if (config.summary !== undefined && typeof config.summary !== 'function') {
    throw new FlowDefinitionError(`flow "${config.name}": summary must be a function of the context`);
  }
  if (config.app !== undefined) checkApp(config.name, config.machine, config.app);
  const map = config.result;
  const flow: Flow<TMachine, TInputs, z.input<TArgs>> = {
    name: config.name,
    title: config.title,
    description: config.description,
    args,
    inputs: config.inputs,
    machine: config.machine,
    hash: definitionHash(config.machine, config.inputs, args),
    migrations: config.migrations ?? {},
    annotations: config.annotations,
    auditValues: config.auditValues ?? false,
    ...(config.summary ? { summary: config.summary } : {}),
    ...(config.app ? { app: { ...config.app, states: { ...config.app.states } } } : {}),
    sensitive: [...(config.sensitive ?? [])],
    needsLedger: (config.needsLedger ?? false) || decisions.length > 0 || steps.length > 0,
    decisions,
    events,
    steps,
    machineWith: (services) =>
      config.implement ? (config.machine.provide(config.implement(services) as any) as TMachine) : config.machine,
    ...(inputSchema ? { inputSchema } : {}),
    completers,
    toResult(output) {
      if (!map) return defaultResult(output);
      const mapped = map(output as OutputFrom<TMachine>);
      return typeof mapped === 'string' ? { content: [{ type: 'text', text: mapped }] } : mapped;
    },
  };
  if (!config.needsLedger && decisions.length === 0) {
    // Kept by a spread copy (the test kit derives flows), invisible to the public type.
    (flow as unknown as Record<symbol, boolean>)[REPLAYABLE] = true;
  }
  return flow;
}

/** Every state path of a machine (`deciding`, `deciding.manager`, ...). */
function statePaths(machine: AnyStateMachine): Set<string> {
  const paths = new Set<string>();
  const walk = (states: Record<string, { states: Record<string, unknown> }>, prefix: string) => {
    for (const [key, node] of Object.entries(states)) {
      const path = prefix ? `${prefix}.${key}` : key;
      paths.add(path);
      walk(node.states as Record<string, { states: Record<string, unknown> }>, path);
    }
  };
  walk(machine.root.states as unknown as Record<string, { states: Record<string, unknown> }>, '');
  return paths;
}

/** A flow's own app ({@link FlowConfig.app}) is an HTML document with data functions for states the machine has. */
function checkApp(name: string, machine: AnyStateMachine, app: FlowApp<any>): void {
  if (typeof app.html !== 'string' || !/^\s*<!doctype html>/i.test(app.html)) {
    throw new FlowDefinitionError(`flow "${name}": app.html must be an HTML5 document (<!doctype html>…)`);
  }
  const paths = statePaths(machine);
  for (const [state, data] of Object.entries(app.states ?? {})) {
    if (!paths.has(state))
      throw new FlowDefinitionError(`flow "${name}": app.states.${state} names no state of its machine`);
    if (typeof data !== 'function') {
      throw new FlowDefinitionError(`flow "${name}": app.states.${state} must be a function of the context`);
    }
  }
}

/** Process-global, so the runner of another copy of the engine reads it (`copies.ts`). */
const REPLAYABLE: unique symbol = Symbol.for('baton.replayable');

/** Whether `flow` needs a ledger only for its durable steps (a runner with `allowReplays` serves it without). */
export function needsLedgerOnlyForSteps(flow: Flow): boolean {
  return (flow as unknown as Record<symbol, boolean | undefined>)[REPLAYABLE] === true;
}
