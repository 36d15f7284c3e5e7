/**
 * Renders a flow as a Mermaid `stateDiagram-v2`: nested and parallel states,
 * transitions labelled with their events (answers, deadlines, finished
 * invocations), and the states that ask for input marked and annotated with
 * what they ask. Pure: reads the machine definition, runs nothing.
 */
import type { AnyStateMachine } from 'xstate';
import type { Flow } from './flow.js';

type StateNodeLike = AnyStateMachine['root'];

const mermaidId = (node: StateNodeLike) => node.path.join('__').replace(/[^A-Za-z0-9_]/g, '_') || 'root';

function duration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** A readable label for a transition's event type. */
export function eventLabel(eventType: string): string {
  const after = /^xstate\.after\.(\d+)\./.exec(eventType);
  if (after) return `after ${duration(Number(after[1]))}`;
  if (eventType.startsWith('xstate.done.actor.')) return `done ${eventType.slice('xstate.done.actor.'.length)}`;
  if (eventType.startsWith('xstate.error.actor.')) return `error ${eventType.slice('xstate.error.actor.'.length)}`;
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  return eventType;
}

/** The input keys a state asks, from `meta.ask`. */
function asks(node: StateNodeLike): string[] {
  const ask = (node.meta as { ask?: unknown } | undefined)?.ask;
  return Array.isArray(ask) ? (ask as string[]) : [];
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
 *   note right of awaitingApproval : asks confirm_deploy (form), change_ticket (form)
 * ```
 */
export function toMermaid(flow: Flow<any, any>): string {
  const lines = ['stateDiagram-v2'];
  const asking: string[] = [];
  const emit = (node: StateNodeLike, indent: string) => {
    const children = Object.values(node.states);
    if (node.type !== 'parallel' && node.initial?.target[0]) {
      lines.push(`${indent}[*] --> ${mermaidId(node.initial.target[0])}`);
    }
    children.forEach((child, index) => {
      if (node.type === 'parallel' && index > 0) lines.push(`${indent}--`);
      if (Object.keys(child.states).length > 0) {
        lines.push(`${indent}state ${mermaidId(child)} {`);
        emit(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else if (child.key !== mermaidId(child)) {
        lines.push(`${indent}state "${child.key}" as ${mermaidId(child)}`);
      }
      if (child.type === 'final') lines.push(`${indent}${mermaidId(child)} --> [*]`);
      const asked = asks(child);
      if (asked.length > 0) {
        asking.push(mermaidId(child));
        const what = asked.map((key) => `${key} (${flow.inputs[key]?.kind ?? '?'})`).join(', ');
        lines.push(`${indent}note right of ${mermaidId(child)} : asks ${what}`);
      }
      for (const [eventType, transitions] of child.transitions) {
        for (const transition of transitions) {
          const guard = transition.guard ? ' [guarded]' : '';
          for (const target of transition.target ?? []) {
            lines.push(`${indent}${mermaidId(child)} --> ${mermaidId(target)} : ${eventLabel(eventType)}${guard}`);
          }
        }
      }
    });
  };
  emit(flow.machine.root, '  ');
  if (asking.length > 0) {
    lines.push('  classDef asks fill:#fde68a,stroke:#b45309,color:#1f2937');
    lines.push(`  class ${asking.join(',')} asks`);
  }
  return `${lines.join('\n')}\n`;
}
