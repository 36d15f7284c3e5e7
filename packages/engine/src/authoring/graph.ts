/**
 * The one graph model of a flow, read from XState's own state-node API
 * (`machine.root`, `node.states`, `node.transitions`, `node.always`,
 * `node.after`): every state node with its path, parent, type, initial child,
 * the keys it asks (`meta.ask`, split into caller inputs and awaited
 * decisions when the input catalog is known) and its `after` delays; every
 * transition as an edge with its kind (`event`, `always`, `after`, `done`,
 * `error`, or `root-on` for an event declared on the machine's root), its
 * event, delay and guard. The diagram, the asked-keys check of `defineFlow`,
 * the test kit's coverage, the lifetime check of `after` delays and the
 * viewer all read this model instead of walking the machine themselves.
 * Pure: reads the machine definition, runs nothing.
 */
import type { AnyStateMachine, StateValue } from 'xstate';
import { FlowDefinitionError } from '../errors.js';
import type { Flow } from './flowTypes.js';
import type { InputCatalog } from './inputs/catalog.js';
import { isDecision } from './inputs/decision.js';

type StateNodeLike = AnyStateMachine['root'];

/** One key a state asks: the input's kind (`form`, `url`, `sampling`, `roots`, `decision`, `?` when unknown). */
export interface MachineGraphAsk {
  readonly key: string;
  readonly kind: string;
  /** Someone other than the caller answers it (a decision the state awaits). */
  readonly decision: boolean;
}

/** An `after` delay of a state: the raw delay (ms or a `setup({ delays })` name) and its value in ms when constant. */
export interface MachineGraphDelay {
  readonly delay: number | string;
  /** Milliseconds, when known without running the machine (a number, or a named delay with a constant value). */
  readonly ms: number | undefined;
}

/** One state node; the root comes first, with `parent: null` and `path: []`. */
export interface MachineGraphNode {
  /** The XState id, e.g. `deploy_production.awaitingApproval`. */
  readonly id: string;
  /** Its key within its parent (the machine id for the root). */
  readonly key: string;
  /** Keys from the root, e.g. `['review', 'legal']`; `[]` for the root. */
  readonly path: readonly string[];
  /** The parent's id; `null` for the root. */
  readonly parent: string | null;
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** The id of its initial child (compound states only). */
  readonly initial: string | null;
  /** Whether it is its parent's initial state. */
  readonly isInitial: boolean;
  /** The keys of `meta.ask`, in order. */
  readonly asks: readonly MachineGraphAsk[];
  /** Its `after` delays. */
  readonly after: readonly MachineGraphDelay[];
}

/** What kind of transition an edge is. */
export type MachineGraphEdgeKind = 'event' | 'always' | 'after' | 'done' | 'error' | 'root-on';

/** One transition (one candidate of an event, in document order). */
export interface MachineGraphEdge {
  /** `e0`, `e1`, ... in document order. */
  readonly id: string;
  /** The id of the state declaring it (the root's id for root-level transitions). */
  readonly source: string;
  /**
   * Target state ids; empty for a targetless transition (actions only, the state stays: a reminder's
   * `after: { remind: { actions } }`), drawn as a loop on its state, its label ending `(in place)`.
   */
  readonly targets: readonly string[];
  readonly kind: MachineGraphEdgeKind;
  /** The raw event type: `input.confirm`, `xstate.after.900000.flow.waiting`, `xstate.done.actor.plan`; `''` for `always`. */
  readonly event: string;
  /** For `after` edges, the delay. */
  readonly delay?: MachineGraphDelay;
  /** The guard's name (`'guarded'` for an inline function), `null` when unguarded. */
  readonly guard: string | null;
  /** A readable label: `input.confirm [isManager]`, `after 15 min`, `done plan`, `always`, `after 24 h (in place)`. */
  readonly label: string;
}

/** A machine's graph. */
export interface MachineGraph {
  /** The root's id (the machine id). */
  readonly id: string;
  /** Every state node, the root first, then in document order (depth first). */
  readonly nodes: readonly MachineGraphNode[];
  readonly edges: readonly MachineGraphEdge[];
}

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** A readable label for a transition's event type. */
export function eventLabel(eventType: string): string {
  if (eventType === '') return 'always';
  const after = /^xstate\.after\.(\d+)\./.exec(eventType);
  if (after) return `after ${duration(Number(after[1]))}`;
  if (eventType.startsWith('xstate.done.actor.')) return `done ${eventType.slice('xstate.done.actor.'.length)}`;
  if (eventType.startsWith('xstate.error.actor.')) return `error ${eventType.slice('xstate.error.actor.'.length)}`;
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  return eventType;
}

function guardName(guard: unknown): string | null {
  if (!guard) return null;
  if (typeof guard === 'string') return guard;
  const type = (guard as { type?: unknown }).type;
  return typeof type === 'string' ? type : 'guarded';
}

function asksOf(node: StateNodeLike, inputs: InputCatalog | undefined): MachineGraphAsk[] {
  const ask = (node.meta as { ask?: unknown } | undefined)?.ask;
  if (ask === undefined) return [];
  if (!Array.isArray(ask) || !ask.every((k) => typeof k === 'string')) {
    throw new FlowDefinitionError(`state "${node.id}": meta.ask must be an array of input keys`);
  }
  return ask.map((key: string) => {
    const spec = inputs?.[key];
    return {
      key,
      kind: (spec as { kind?: string } | undefined)?.kind ?? '?',
      decision: spec ? isDecision(spec) : false,
    };
  });
}

function delayOf(raw: unknown, named: Record<string, unknown>): MachineGraphDelay {
  if (typeof raw === 'number') return { delay: raw, ms: raw };
  if (typeof raw !== 'string') return { delay: 'computed', ms: undefined };
  const value = Object.hasOwn(named, raw) ? named[raw] : Number(raw);
  return { delay: raw, ms: typeof value === 'number' && Number.isFinite(value) ? value : undefined };
}

function kindOf(eventType: string, isRoot: boolean): MachineGraphEdgeKind {
  if (eventType === '') return 'always';
  if (eventType.startsWith('xstate.after.')) return 'after';
  if (eventType.startsWith('xstate.done.')) return 'done';
  if (eventType.startsWith('xstate.error.')) return 'error';
  return isRoot ? 'root-on' : 'event';
}

/**
 * The graph of a flow (asked keys split into caller inputs and decisions by its input catalog), or of a
 * bare machine (asked keys of kind `?`).
 *
 * @example
 * ```ts
 * import { machineGraph } from '@baton/engine';
 * import { setup } from 'xstate';
 *
 * const machine = setup({}).createMachine({
 *   id: 'm',
 *   initial: 'route',
 *   on: { cancel: '.cancelled' },
 *   states: { route: { always: 'waiting' }, waiting: { after: { 1000: 'cancelled' } }, cancelled: { type: 'final' } },
 * });
 * const graph = machineGraph(machine);
 * graph.edges.map((e) => e.kind); // ['root-on', 'always', 'after']
 * ```
 * @throws FlowDefinitionError when a state's `meta.ask` is not an array of keys.
 */
export function machineGraph(source: AnyStateMachine | Pick<Flow, 'machine' | 'inputs'>): MachineGraph {
  const flow = 'root' in source ? undefined : source;
  const machine = flow ? flow.machine : (source as AnyStateMachine);
  const named = (machine.implementations.delays ?? {}) as Record<string, unknown>;
  const nodes: MachineGraphNode[] = [];
  const edges: MachineGraphEdge[] = [];
  const visit = (node: StateNodeLike, parent: StateNodeLike | null) => {
    const delays = new Map<string, MachineGraphDelay>();
    for (const transition of node.after) delays.set(transition.eventType, delayOf(transition.delay, named));
    const parentInitial = parent && parent.type !== 'parallel' ? parent.initial?.target[0]?.id : undefined;
    nodes.push({
      id: node.id,
      key: node.key,
      path: node.path,
      parent: parent?.id ?? null,
      type: node.type,
      initial: node.type === 'compound' ? (node.initial?.target[0]?.id ?? null) : null,
      isInitial: parentInitial !== undefined && parentInitial === node.id,
      asks: asksOf(node, flow?.inputs),
      after: [...delays.values()],
    });
    const transitions: [string, readonly { target?: readonly StateNodeLike[] | undefined; guard?: unknown }[]][] = [
      ...node.transitions,
    ];
    if (node.always && node.always.length > 0) transitions.push(['', node.always]);
    for (const [event, list] of transitions) {
      const kind = kindOf(event, parent === null);
      for (const transition of list) {
        const delay = delays.get(event);
        const guard = guardName(transition.guard);
        const base =
          delay && delay.ms === undefined
            ? `after ${delay.delay}`
            : delay
              ? `after ${duration(delay.ms!)}`
              : eventLabel(event);
        const targets = (transition.target ?? []).map((target) => target.id);
        const label = guard ? `${base} [${guard}]` : base;
        edges.push({
          id: `e${edges.length}`,
          source: node.id,
          targets,
          kind,
          event,
          ...(delay ? { delay } : {}),
          guard,
          // A targetless transition acts in place (a reminder: `after` with actions only): the state stays.
          label: targets.length === 0 ? `${label} (in place)` : label,
        });
      }
    }
    for (const child of Object.values(node.states)) visit(child, node);
  };
  visit(machine.root, null);
  return { id: machine.root.id, nodes, edges };
}

/** Ids of the states a state value names (ancestors included), in document order; unknown keys are skipped. */
export function statesOfValue(machine: AnyStateMachine, value: StateValue | null | undefined): string[] {
  const ids: string[] = [];
  if (value === null || value === undefined) return ids;
  const walk = (node: StateNodeLike, v: StateValue) => {
    const entries: [string, StateValue | undefined][] =
      typeof v === 'string' ? [[v, undefined]] : Object.entries(v as Record<string, StateValue>);
    for (const [key, sub] of entries) {
      const child = node.states[key];
      if (!child) continue;
      ids.push(child.id);
      if (sub !== undefined) walk(child, sub);
    }
  };
  walk(machine.root, value);
  return ids;
}
