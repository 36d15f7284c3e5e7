/**
 * Renders a flow as a Mermaid `stateDiagram-v2` from its graph model
 * ({@link machineGraph}): nested and parallel states, every transition
 * labelled with its event (answers, `always`, deadlines, finished or failed
 * invocations, guards), a transition that acts in place (a reminder: `after`
 * with actions and no target) as a loop on its state, transitions declared on the machine's root drawn from
 * an "any state" node, and the states that ask or await input marked and
 * annotated with what they ask. State ids that Mermaid reserves (`state`,
 * `note`, `class`, `classDef`, `end`, ...) are renamed and shown by their key.
 * Pure: reads the machine definition, runs nothing.
 */
import type { Flow } from './flowTypes.js';
import { type MachineGraphNode, machineGraph } from './graph.js';

export { eventLabel } from './graph.js';

/** Words of Mermaid's state diagram grammar (lowercased) that cannot be a state id. */
const RESERVED = new Set([
  'state',
  'note',
  'class',
  'classdef',
  'style',
  'direction',
  'click',
  'acctitle',
  'accdescr',
  'as',
  'end',
  'hide',
  'left',
  'right',
  'of',
  'default',
  'href',
  'call',
  'callback',
  'link',
  'root_any',
]);

/** Text Mermaid shows as is: quotes, semicolons and hashes as entity codes, line breaks as spaces. */
const ENTITIES: Record<string, string> = { '#': '#35;', '"': '#quot;', ';': '#59;' };
const text = (value: string) => value.replace(/[#";]/g, (c) => ENTITIES[c]!).replace(/[\r\n]+/g, ' ');

/** Mermaid ids for every node: its path joined with `__`, prefixed with `s_` when reserved or taken. */
function mermaidIds(nodes: readonly MachineGraphNode[]): Map<string, string> {
  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const node of nodes) {
    let id = node.path.join('__').replace(/[^A-Za-z0-9_]/g, '_') || 'root';
    if (RESERVED.has(id.toLowerCase()) || /^[0-9]/.test(id)) id = `s_${id}`;
    let unique = id;
    for (let n = 2; used.has(unique); n++) unique = `${id}_${n}`;
    used.add(unique);
    ids.set(node.id, unique);
  }
  return ids;
}

/**
 * The flow as Mermaid `stateDiagram-v2` source.
 *
 * @example
 * ```text
 * stateDiagram-v2
 *   [*] --> planning
 *   planning --> awaitingApproval : done computePlan
 *   awaitingApproval --> expired : after 15 min
 *   awaitingApproval --> awaitingApproval : after 10 min (in place)
 *   note right of awaitingApproval : asks confirm_deploy (form), change_ticket (form)
 * ```
 */
export function toMermaid(flow: Flow<any, any>): string {
  const graph = machineGraph(flow);
  const ids = mermaidIds(graph.nodes);
  const idOf = (stateId: string) => (stateId === graph.id ? 'root_any' : ids.get(stateId)!);
  const children = new Map<string, MachineGraphNode[]>();
  for (const node of graph.nodes) {
    if (node.parent === null) continue;
    const list = children.get(node.parent) ?? [];
    list.push(node);
    children.set(node.parent, list);
  }
  const lines = ['stateDiagram-v2'];
  const asking: string[] = [];
  const edgesFrom = (source: string, indent: string) => {
    for (const edge of graph.edges) {
      if (edge.source !== source) continue;
      // A transition that acts in place (no target) is a loop on its own state.
      for (const target of edge.targets.length > 0 ? edge.targets : [source]) {
        lines.push(`${indent}${idOf(source)} --> ${idOf(target)} : ${text(edge.label)}`);
      }
    }
  };
  const emit = (node: MachineGraphNode, indent: string) => {
    if (node.initial) lines.push(`${indent}[*] --> ${idOf(node.initial)}`);
    (children.get(node.id) ?? []).forEach((child, index) => {
      const id = idOf(child.id);
      if (node.type === 'parallel' && index > 0) lines.push(`${indent}--`);
      if (child.key !== id) lines.push(`${indent}state "${text(child.key)}" as ${id}`);
      if (children.has(child.id)) {
        lines.push(`${indent}state ${id} {`);
        emit(child, `${indent}  `);
        lines.push(`${indent}}`);
      }
      if (child.type === 'final') lines.push(`${indent}${id} --> [*]`);
      if (child.asks.length > 0) {
        asking.push(id);
        const awaits = child.asks.every((ask) => ask.decision);
        const what = child.asks.map((ask) => `${ask.key} (${ask.kind})`).join(', ');
        lines.push(`${indent}note right of ${id} : ${awaits ? 'awaits' : 'asks'} ${text(what)}`);
      }
      edgesFrom(child.id, indent);
    });
  };
  const root = graph.nodes[0]!;
  if (graph.edges.some((edge) => edge.source === root.id)) {
    lines.push('  state "any state" as root_any');
  }
  emit(root, '  ');
  edgesFrom(root.id, '  ');
  if (asking.length > 0) {
    lines.push('  classDef asks fill:#fde68a,stroke:#b45309,color:#1f2937');
    lines.push(`  class ${asking.join(',')} asks`);
  }
  return `${lines.join('\n')}\n`;
}
