/**
 * State coverage for flow tests, read from the flow's graph model: every state of a flow, the states a set of
 * runs passed through, the states no test reached, and shortest paths to each
 * state derived with XState's graph utilities, with answer events generated
 * from the flow's input catalog.
 */
import type { AnyMachineSnapshot, AnyStateMachine, EventObject, StateValue } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import type { Flow } from '../authoring/flowTypes.js';
import { machineGraph, statesOfValue } from '../authoring/graph.js';
import { askedKeys } from '../round/body.js';

/** Ids of every state of the flow (the root excluded), in document order. */
export function allStates(flow: Flow<any, any>): string[] {
  return machineGraph(flow.machine)
    .nodes.slice(1)
    .map((node) => node.id);
}

/** Ids of the states active in a state value (ancestors included). */
export function statesIn(flow: Flow<any, any>, value: StateValue): string[] {
  return statesOfValue(flow.machine, value);
}

/**
 * The state value a run enters first, before any `always` transition leaves it (the initial
 * configuration): `'routing'`, `{ review: 'legal' }`. A run's first snapshot already shows where the
 * transient states led, so the test kit records this one itself.
 */
export function initialStateValue(flow: Flow<any, any>): StateValue {
  type Node = AnyStateMachine['root'];
  const under = (node: Node): StateValue | undefined => {
    if (node.type === 'parallel') {
      return Object.fromEntries(
        Object.values(node.states as Record<string, Node>).map((child) => [child.key, under(child) ?? {}]),
      );
    }
    const first = node.type === 'compound' ? node.initial?.target[0] : undefined;
    if (!first) return undefined;
    const sub = under(first);
    return sub === undefined ? first.key : { [first.key]: sub };
  };
  return under(flow.machine.root) ?? {};
}

/** States of the flow that none of the visited state values reached. */
export function unvisitedStates(flow: Flow<any, any>, visited: readonly StateValue[]): string[] {
  const seen = new Set(visited.flatMap((value) => statesIn(flow, value)));
  return allStates(flow).filter((id) => !seen.has(id));
}

/** Options of {@link flowPaths}. */
export interface FlowPathOptions {
  /** The machine's input (parsed arguments). */
  input: unknown;
  /** Sample answers per input key (event payloads without `type`); forms and URLs also try decline and cancel. */
  answers?: Record<string, readonly object[]>;
  /** Outputs of invoked promises by invoke id, turned into their `xstate.done.actor.<id>` events. */
  invokeOutputs?: Record<string, unknown>;
}

/** A path to one state: the events that reach it from the start. */
export interface FlowPath {
  state: StateValue;
  events: EventObject[];
}

/**
 * Shortest paths to every reachable state, for checking that each state of a flow is reached by some test.
 * Asked inputs get their sample answers (plus decline/cancel for forms and URLs); invoked promises
 * complete with the given outputs.
 */
export function flowPaths(flow: Flow<any, any>, options: FlowPathOptions): FlowPath[] {
  const events = (snapshot: AnyMachineSnapshot): EventObject[] => {
    const out: EventObject[] = [];
    for (const key of askedKeys(snapshot)) {
      const kind = flow.inputs[key]?.kind;
      const samples = [...(options.answers?.[key] ?? [])];
      if (kind === 'form' || kind === 'url') samples.push({ action: 'decline' }, { action: 'cancel' });
      for (const sample of samples) out.push({ type: `input.${key}`, ...sample });
    }
    for (const [id, output] of Object.entries(options.invokeOutputs ?? {})) {
      out.push({ type: `xstate.done.actor.${id}`, output } as EventObject);
    }
    return out;
  };
  const paths = getShortestPaths(flow.machine, { input: options.input, events: events as never });
  return paths.map((path) => ({
    state: (path.state as { value: StateValue }).value,
    events: path.steps.map((step) => step.event as EventObject).filter((e) => !e.type.startsWith('xstate.init')),
  }));
}
