/**
 * A recorded flow instance laid onto its flow's graph: for each audited
 * round, the states it passed through and the transitions it most likely
 * took (an edge whose source was active and whose target was entered between
 * two consecutive recorded state values, preferring the events of the
 * answers the round received), each answer as `key:action` with the
 * transition it caused (an answer held from an earlier round shows in the
 * round that used it), and what the instance waits for and from whom when
 * its last round left it awaiting decisions by someone else. Pure.
 */
import type { AuditEntry, Flow, RequestStatus } from '@baton/engine';
import type { StateValue } from 'xstate';
import { type FlowGraph, statesOf } from './flowGraph.js';

/** One answer of a round as the page shows it. */
export interface RecordedAnswer {
  readonly key: string;
  /** The action the protocol carried: `accept`, `decline`, `cancel`, `unsupported`, or `invalid`. */
  readonly action: string;
  /** `key:action`, e.g. `manager_approval:accept` (a rejection is an accepted form saying no). */
  readonly text: string;
  /** The answer's value, only when the flow records values (`auditValues`); sensitive ones are `'[redacted]'`. */
  readonly value?: unknown;
  /** Received in an earlier round and used in this one. */
  readonly held?: true;
  /** A decision's decider (keyed hash). */
  readonly decider?: string;
  /** Ids of the graph edges this answer's event took in the round. */
  readonly transitions: readonly string[];
}

/** One round as the page shows it. */
export interface RecordedRound extends AuditEntry {
  /** Its answers, with the transitions they caused. */
  readonly answers: readonly RecordedAnswer[];
  /** State ids active before and after the round. */
  readonly beforeStates: readonly string[];
  readonly afterStates: readonly string[];
  /** Every state id active at some point of the round, in first-seen order. */
  readonly visited: readonly string[];
  /** Ids of the graph edges taken, in order. */
  readonly edges: readonly string[];
}

/** A flow instance with its rounds mapped onto the graph. */
export interface RecordedInstance {
  readonly fid: string;
  readonly flow: string;
  /** Whether every round ran on the flow's current definition (otherwise the mapping may be off). */
  readonly currentDefinition: boolean;
  readonly rounds: readonly RecordedRound[];
  /** Union of every round's visited states and edges. */
  readonly visited: readonly string[];
  readonly edges: readonly string[];
  /** What it waits for, when its last round left it awaiting decisions (or the ledger has its request). */
  readonly waiting?: InstanceWaiting;
}

/** One decision an instance waits for: its key, who may make it, and until when. */
export interface WaitingDecision {
  readonly key: string;
  /** The role that may decide; `null` when only the flow's rule (`may`) says who may. */
  readonly role: string | null;
  /** Deadline (ms since epoch), when known (from the ledger). */
  readonly deadline?: number;
}

/** What a recorded instance waits for, and from whom. */
export interface InstanceWaiting {
  /** `ledger`: the parked request in the ledger; `audit`: derived from the last recorded round. */
  readonly source: 'ledger' | 'audit';
  /** The parked request's status (from the ledger; `waiting` when derived from the audit). */
  readonly status: RequestStatus;
  readonly decisions: readonly WaitingDecision[];
  /** For people, e.g. `waiting for manager_approval (role manager)`. */
  readonly text: string;
}

const whom = (decision: WaitingDecision) =>
  `${decision.key} (${decision.role ? `role ${decision.role}` : "whoever the flow's rule allows"}${
    decision.deadline !== undefined ? `, until ${new Date(decision.deadline).toISOString()}` : ''
  })`;

/** The sentence the page shows for a waiting (or ended) request. */
export function waitingText(status: RequestStatus, decisions: readonly WaitingDecision[]): string {
  if (status !== 'waiting') return `request ${status}: nothing left to decide`;
  if (decisions.length === 0) return 'waiting for its requester (baton_resume)';
  return `waiting for ${decisions.map(whom).join(' and ')}`;
}

/**
 * What an instance waits for according to its last recorded round: the decisions asked by the
 * states it was left in (none when it ended, failed, or waits on its caller's answers).
 */
export function waitingFromAudit(flow: Flow<any, any>, last: AuditEntry | undefined): InstanceWaiting | undefined {
  if (!last || last.outcome === 'error' || last.after === null) return undefined;
  const inputs = flow.inputs as Record<string, { kind?: string; role?: string }>;
  const keys = new Set<string>();
  for (const id of statesOf(flow, last.after)) {
    let node: { type?: string; meta?: { ask?: unknown } };
    try {
      node = flow.machine.getStateNodeById(id);
    } catch {
      continue; // a state of another definition
    }
    if (node.type === 'final') return undefined;
    const asks = Array.isArray(node.meta?.ask) ? node.meta.ask : [];
    for (const key of asks) if (typeof key === 'string' && inputs[key]?.kind === 'decision') keys.add(key);
  }
  if (keys.size === 0) return undefined;
  const decisions = [...keys].map((key) => ({ key, role: inputs[key]?.role ?? null }));
  return { source: 'audit', status: 'waiting', decisions, text: waitingText('waiting', decisions) };
}

function takenEdges(graph: FlowGraph, from: readonly string[], to: readonly string[], events: Set<string>): string[] {
  const active = new Set(from);
  const entered = new Set(to.filter((id) => !active.has(id)));
  const byTarget = new Map<string, FlowGraph['edges'][number][]>();
  for (const edge of graph.edges) {
    if (active.has(edge.source) && entered.has(edge.target)) {
      byTarget.set(edge.target, [...(byTarget.get(edge.target) ?? []), edge]);
    }
  }
  const taken: string[] = [];
  for (const candidates of byTarget.values()) {
    const answered = candidates.filter((edge) => events.has(edge.event));
    for (const edge of answered.length > 0 ? answered : candidates) taken.push(edge.id);
  }
  return taken;
}

/** Map an instance's audited rounds onto the flow's graph. */
export function recordedInstance(
  flow: Flow<any, any>,
  graph: FlowGraph,
  rounds: readonly AuditEntry[],
): RecordedInstance {
  const allVisited = new Set<string>();
  const allEdges = new Set<string>();
  const mapped = rounds.map((entry): RecordedRound => {
    const values: StateValue[] = [];
    for (const value of [entry.before, ...entry.path]) {
      if (value === null || value === undefined) continue;
      if (values.length > 0 && JSON.stringify(values[values.length - 1]) === JSON.stringify(value)) continue;
      values.push(value);
    }
    const events = new Set(entry.received.map((answer) => `input.${answer.key}`));
    const visited = new Set<string>();
    const edges: string[] = [];
    let previous: string[] | undefined;
    for (const value of values) {
      const states = statesOf(flow, value);
      for (const id of states) visited.add(id);
      if (previous) edges.push(...takenEdges(graph, previous, states, events));
      previous = states;
    }
    for (const id of visited) allVisited.add(id);
    for (const id of edges) allEdges.add(id);
    const byId = new Map(graph.edges.map((edge) => [edge.id, edge]));
    const answers = entry.received.map(
      (answer): RecordedAnswer => ({
        key: answer.key,
        action: answer.action,
        text: `${answer.key}:${answer.action}`,
        ...('value' in answer ? { value: answer.value } : {}),
        ...(answer.held ? { held: true as const } : {}),
        ...(answer.decider !== undefined ? { decider: answer.decider } : {}),
        // An answer refused, or held for a later round, moved nothing here: no edge of its event was taken.
        transitions: [...new Set(edges)].filter((id) => byId.get(id)?.event === `input.${answer.key}`),
      }),
    );
    return {
      ...entry,
      answers,
      beforeStates: statesOf(flow, entry.before),
      afterStates: statesOf(flow, entry.after),
      visited: [...visited],
      edges: [...new Set(edges)],
    };
  });
  return {
    fid: rounds[0]?.fid ?? '',
    flow: flow.name,
    currentDefinition: rounds.every((entry) => entry.hash === flow.hash),
    rounds: mapped,
    visited: [...allVisited],
    edges: [...allEdges],
    ...optional('waiting', waitingFromAudit(flow, rounds[rounds.length - 1])),
  };
}

const optional = <K extends string, V>(key: K, value: V | undefined) =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;
