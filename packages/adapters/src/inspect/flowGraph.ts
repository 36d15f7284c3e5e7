/**
 * A flow's state graph as plain JSON for the inspect page, projected from the
 * engine's graph model (`machineGraph`): every state node (nested and parallel
 * ones as containers, with what each state asks) and every transition between
 * states as one edge per target, labelled with its event (`always`, deadlines,
 * done and error included), a transition that acts in place (a reminder's
 * `after` with actions only) as a loop from its state to itself, labelled
 * `after 24 h (in place)`; root-level transitions, which leave from any
 * state, start from the pseudo-state `anyState` (the machine's id). Also maps a recorded state value to the state ids it
 * names. Pure: reads the machine definition, runs nothing.
 */
import { type Flow, machineGraph, statesOfValue } from '@baton/engine';
import type { StateValue } from 'xstate';

/** What a state asks: an input key and its kind (`form`, `url`, `sampling`, `roots`, ...). */
export interface GraphAsk {
  readonly key: string;
  readonly kind: string;
}

/** One state of the flow (the machine's root is not a node; its type is `rootType`). */
export interface GraphNode {
  /** The state's XState id, e.g. `deploy_production.awaitingApproval`. */
  readonly id: string;
  /** Its key within its parent, e.g. `awaitingApproval`. */
  readonly key: string;
  /** The parent state's id; `null` for top-level states. */
  readonly parent: string | null;
  readonly type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  /** Whether it is its parent's initial state. */
  readonly initial: boolean;
  readonly asks: readonly GraphAsk[];
}

/** One transition to one target. */
export interface GraphEdge {
  /** `e0`, `e1`, ... in document order. */
  readonly id: string;
  readonly source: string;
  readonly target: string;
  /**
   * The readable event, e.g. `input.confirm_deploy [guarded]`, `after 15 min`, `done computePlan`;
   * `after 24 h (in place)` for a transition with no target (then `target` is `source`).
   */
  readonly label: string;
  /** The raw event type (`''` for an `always` transition). */
  readonly event: string;
  /** `event`, `always`, `after`, `done`, `error`, or `root-on` (from {@link FlowGraph.anyState}). */
  readonly kind: 'event' | 'always' | 'after' | 'done' | 'error' | 'root-on';
}

/** A flow's state graph. */
export interface FlowGraph {
  readonly flow: string;
  readonly title: string | null;
  readonly description: string;
  readonly hash: string;
  readonly rootType: 'compound' | 'parallel';
  /**
   * The source of root-level transitions (declared on the machine, taken from any state): the
   * machine's id, drawn as an "any state" marker; `null` when the machine declares none.
   */
  readonly anyState: string | null;
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
}

/**
 * The flow's state graph.
 *
 * @example
 * ```ts
 * import { flowGraph } from '@baton/adapters';
 * import { deployProduction } from './flows.js';
 *
 * const graph = flowGraph(deployProduction);
 * graph.nodes.find((n) => n.key === 'awaitingApproval')!.asks; // [{ key: 'confirm_deploy', kind: 'form' }, ...]
 * ```
 */
export function flowGraph(flow: Flow<any, any>): FlowGraph {
  const graph = machineGraph(flow);
  const nodes: GraphNode[] = graph.nodes.slice(1).map((node) => ({
    id: node.id,
    key: node.key,
    parent: node.parent === graph.id ? null : node.parent,
    type: node.type,
    initial: node.isInitial,
    asks: node.asks.map(({ key, kind }) => ({ key, kind })),
  }));
  const edges: GraphEdge[] = [];
  let anyState: string | null = null;
  for (const edge of graph.edges) {
    // A root-level transition (from any state) leaves from the machine's id: the page's "any state".
    if (edge.source === graph.id) anyState = graph.id;
    // A transition that acts in place (a reminder: no target) loops back to its own state.
    for (const target of edge.targets.length > 0 ? edge.targets : [edge.source]) {
      edges.push({
        id: `e${edges.length}`,
        source: edge.source,
        target,
        label: edge.label,
        event: edge.event,
        kind: edge.kind,
      });
    }
  }
  return {
    flow: flow.name,
    title: flow.title ?? null,
    description: flow.description,
    hash: flow.hash,
    rootType: flow.machine.root.type === 'parallel' ? 'parallel' : 'compound',
    anyState,
    nodes,
    edges,
  };
}

/** Ids of the states a state value names (ancestors included), in document order; unknown keys are skipped. */
export function statesOf(flow: Flow<any, any>, value: StateValue | null): string[] {
  return statesOfValue(flow.machine, value);
}
