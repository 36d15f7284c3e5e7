/**
 * A flow's state graph as plain JSON for the inspect page: every state node
 * (nested and parallel ones as containers, with what each state asks) and
 * every transition as an edge labelled with its event. Also maps a recorded
 * state value to the state ids it names. Pure: reads the machine definition,
 * runs nothing.
 */
import { eventLabel, type Flow } from '@baton/engine';
import type { AnyStateMachine, StateValue } from 'xstate';

type StateNodeLike = AnyStateMachine['root'];

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
  /** The readable event, e.g. `input.confirm_deploy [guarded]`, `after 15 min`, `done computePlan`. */
  readonly label: string;
  /** The raw event type (`''` for an `always` transition). */
  readonly event: string;
}

/** A flow's state graph. */
export interface FlowGraph {
  readonly flow: string;
  readonly title: string | null;
  readonly description: string;
  readonly hash: string;
  readonly rootType: 'compound' | 'parallel';
  readonly nodes: readonly GraphNode[];
  readonly edges: readonly GraphEdge[];
}

function asksOf(node: StateNodeLike, flow: Flow<any, any>): GraphAsk[] {
  const ask = (node.meta as { ask?: unknown } | undefined)?.ask;
  if (!Array.isArray(ask)) return [];
  return ask
    .filter((key): key is string => typeof key === 'string')
    .map((key) => ({ key, kind: (flow.inputs as Record<string, { kind?: string }>)[key]?.kind ?? '?' }));
}

function guardLabel(guard: unknown): string {
  if (!guard) return '';
  if (typeof guard === 'string') return ` [${guard}]`;
  const type = (guard as { type?: unknown }).type;
  return typeof type === 'string' ? ` [${type}]` : ' [guarded]';
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
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const visit = (node: StateNodeLike, parentId: string | null) => {
    const initialId = node.type !== 'parallel' ? node.initial?.target[0]?.id : undefined;
    for (const child of Object.values(node.states)) {
      nodes.push({
        id: child.id,
        key: child.key,
        parent: parentId,
        type: child.type,
        initial: child.id === initialId,
        asks: asksOf(child, flow),
      });
      const transitions: [string, readonly { target?: readonly StateNodeLike[] | undefined; guard?: unknown }[]][] = [
        ...child.transitions,
      ];
      if (child.always && child.always.length > 0) transitions.push(['', child.always]);
      for (const [event, list] of transitions) {
        for (const transition of list) {
          for (const target of transition.target ?? []) {
            const label = `${event === '' ? 'always' : eventLabel(event)}${guardLabel(transition.guard)}`;
            edges.push({ id: `e${edges.length}`, source: child.id, target: target.id, label, event });
          }
        }
      }
      visit(child, child.id);
    }
  };
  visit(flow.machine.root, null);
  return {
    flow: flow.name,
    title: flow.title ?? null,
    description: flow.description,
    hash: flow.hash,
    rootType: flow.machine.root.type === 'parallel' ? 'parallel' : 'compound',
    nodes,
    edges,
  };
}

/** Ids of the states a state value names (ancestors included), in document order; unknown keys are skipped. */
export function statesOf(flow: Flow<any, any>, value: StateValue | null): string[] {
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
  walk(flow.machine.root, value);
  return ids;
}
