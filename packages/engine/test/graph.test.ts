import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import approvals from '../../../examples/approvals/index.js';
import { askedKeysByState } from '../src/authoring/flow.js';
import { machineGraph, statesOfValue, toMermaid } from '../src/index.js';
import { staticDelays } from '../src/round/lifetimes.js';
import { allStates } from '../src/testing/index.js';
import { deployFlow } from './fixtures/deployFlow.js';
import { reservedFlow, routedFlow } from './fixtures/graphFlows.js';

type Node = { states: Record<string, Node>; transitions: Map<string, unknown[]>; always?: unknown[]; meta?: unknown };

/** Transitions counted straight from XState's nodes, to check the model leaves none out. */
function countTransitions(node: Node): number {
  let n = [...node.transitions.values()].reduce((sum, list) => sum + list.length, 0) + (node.always?.length ?? 0);
  for (const child of Object.values(node.states)) n += countTransitions(child);
  return n;
}

const edgesOf = (flow: Parameters<typeof machineGraph>[0]) =>
  machineGraph(flow).edges.map((e) => `${e.kind} ${e.source} -> ${e.targets.join(',')} : ${e.label}`);

describe('machineGraph', () => {
  it('has every edge kind: root-level on and after, always (guarded), after (numeric and named), done, error', () => {
    expect(edgesOf(routedFlow)).toEqual([
      'root-on routed -> routed.cancelled : cancel',
      'root-on routed -> routed.asking : admin.reset [isBig]',
      'after routed -> routed.cancelled : after 24 h',
      'event routed.asking -> routed.route : input.details',
      'always routed.route -> routed.approval : always [isBig]',
      'always routed.route -> routed.checking : always',
      'event routed.approval -> routed.checking : input.manager_approval',
      'after routed.approval -> routed.cancelled : after 15 min',
      'after routed.approval -> routed.approval : after 1 min',
      'done routed.checking -> routed.done : done check',
      'error routed.checking -> routed.failed : error check',
    ]);
    const graph = machineGraph(routedFlow);
    const approval = graph.nodes.find((n) => n.key === 'approval')!;
    expect(approval.asks).toEqual([{ key: 'manager_approval', kind: 'decision', decision: true }]);
    expect(approval.after).toEqual(
      expect.arrayContaining([
        { delay: 'reminder', ms: 60_000 },
        { delay: 900_000, ms: 900_000 },
      ]),
    );
    expect(graph.nodes.find((n) => n.key === 'asking')!.asks).toEqual([
      { key: 'details', kind: 'form', decision: false },
    ]);
    // Without the flow's catalog, asked keys are known but not their kinds.
    expect(machineGraph(routedFlow.machine).nodes.find((n) => n.key === 'approval')!.asks).toEqual([
      { key: 'manager_approval', kind: '?', decision: false },
    ]);
  });

  it('has the root first, then every state with its path, parent, type and initial child', () => {
    const graph = machineGraph(reservedFlow);
    expect(graph.id).toBe('reserved');
    expect(graph.nodes[0]).toMatchObject({ id: 'reserved', path: [], parent: null, initial: 'reserved.state' });
    const byKey = (path: string) => graph.nodes.find((n) => n.path.join('.') === path)!;
    expect(byKey('class')).toMatchObject({ type: 'parallel', initial: null, parent: 'reserved' });
    expect(byKey('class.style')).toMatchObject({
      type: 'compound',
      initial: 'reserved.class.style.end',
      parent: 'reserved.class',
      isInitial: false,
    });
    expect(byKey('class.style.end')).toMatchObject({ type: 'atomic', isInitial: true });
    expect(byKey('class.style.direction')).toMatchObject({ type: 'final', isInitial: false });
    expect(graph.nodes.slice(1).map((n) => n.id)).toEqual(allStates(reservedFlow));
    expect(edgesOf(reservedFlow)).toContain('done reserved.class -> reserved.classDef : done');
    expect(edgesOf(reservedFlow)).toContain('always reserved.note -> reserved.classDef : always');
  });

  it('maps a state value to the ids it names', () => {
    expect(statesOfValue(reservedFlow.machine, { class: { style: 'end', click: 'as' } })).toEqual([
      'reserved.class',
      'reserved.class.style',
      'reserved.class.style.end',
      'reserved.class.click',
      'reserved.class.click.as',
    ]);
    expect(statesOfValue(reservedFlow.machine, null)).toEqual([]);
  });

  it.each([...approvals, deployFlow, routedFlow, reservedFlow].map((f) => [f.name, f] as const))(
    'for %s: every state, every transition, every asked key and every constant delay',
    (_name, flow) => {
      const graph = machineGraph(flow);
      expect(graph.edges).toHaveLength(countTransitions(flow.machine.root as unknown as Node));
      const ids = new Set(graph.nodes.map((n) => n.id));
      for (const edge of graph.edges) {
        expect(ids.has(edge.source)).toBe(true);
        for (const target of edge.targets) expect(ids.has(target)).toBe(true);
        expect(edge.label).not.toBe('');
      }
      for (const node of graph.nodes) {
        const meta = (flow.machine.getStateNodeById(node.id).meta as { ask?: string[] } | undefined)?.ask ?? [];
        expect(node.asks.map((a) => a.key)).toEqual(meta);
        for (const ask of node.asks) expect(ask.decision).toBe(flow.decisions.includes(ask.key));
      }
      expect(askedKeysByState(flow.machine)).toEqual(
        new Map(graph.nodes.filter((n) => n.asks.length > 0).map((n) => [n.id, n.asks.map((a) => a.key)])),
      );
      const delays = graph.nodes.flatMap((n) => n.after.filter((d) => d.ms !== undefined));
      expect(staticDelays(flow.machine)).toHaveLength(delays.length);
    },
  );

  it('refuses a meta.ask that is not a list of keys', () => {
    const machine = setup({}).createMachine({ initial: 'a', states: { a: { meta: { ask: 'x' } } } });
    expect(() => machineGraph(machine)).toThrow(/meta.ask must be an array of input keys/);
  });
});

describe('toMermaid from the graph model', () => {
  it('draws always edges, so a state reached only through one has a way in', () => {
    const text = toMermaid(routedFlow);
    expect(text).toContain('route --> approval : always [isBig]');
    expect(text).toContain('route --> checking : always');
    expect(text).toContain('note right of approval : awaits manager_approval (decision)');
    expect(text).toContain('checking --> failed : error check');
    expect(text).toContain('approval --> approval : after 1 min');
  });

  it('draws root-level transitions from an "any state" node', () => {
    const text = toMermaid(routedFlow);
    expect(text).toContain('state "any state" as root_any');
    expect(text).toContain('root_any --> cancelled : cancel');
    expect(text).toContain('root_any --> asking : admin.reset [isBig]');
    expect(text).toContain('root_any --> cancelled : after 24 h');
    expect(toMermaid(deployFlow)).not.toContain('root_any');
  });

  it('renames states named like Mermaid keywords and shows them by their key', () => {
    const text = toMermaid(reservedFlow);
    expect(text).toContain('[*] --> s_state');
    expect(text).toContain('state "state" as s_state');
    expect(text).toContain('s_state --> s_note : input.details');
    expect(text).toContain('state s_class {');
    expect(text).toContain('state "classDef" as s_classDef');
    expect(text).toContain('classDef__note --> classDef__state : a#59;b#35;c');
    expect(text).toContain('class s_state asks');
    expect(text).not.toMatch(/^\s*(state|note|class|classDef) -->/m);
  });
});
