/**
 * The minimal form of a machine snapshot that travels in a requestState.
 * A settled snapshot is always `active` with no running children, so only the
 * state value, the context and (when used) the history value are kept; XState
 * rebuilds the rest. This is also what migrations see and return.
 */
import type { AnyMachineSnapshot, Snapshot, StateValue } from 'xstate';
import type { PersistedState } from '../authoring/flowTypes.js';

/** `[value, context]` or `[value, context, historyValue]`. */
export type CompactSnapshot = [value: StateValue, context: unknown, history?: Record<string, unknown>];

/** Drop what XState can rebuild from a persisted snapshot. */
export function compactSnapshot(snapshot: AnyMachineSnapshot): CompactSnapshot {
  const persisted = snapshot as unknown as {
    value: StateValue;
    context: unknown;
    historyValue?: Record<string, unknown>;
  };
  const history = persisted.historyValue;
  return history && Object.keys(history).length > 0
    ? [persisted.value, persisted.context, history]
    : [persisted.value, persisted.context];
}

/** Whether an (authenticated) payload is shaped like a compact snapshot. */
export function isCompactSnapshot(value: unknown): value is CompactSnapshot {
  if (!Array.isArray(value) || value.length < 2 || value.length > 3) return false;
  const [stateValue, , history] = value;
  const validValue = typeof stateValue === 'string' || (typeof stateValue === 'object' && stateValue !== null);
  return validValue && (history === undefined || (typeof history === 'object' && history !== null));
}

/** The parts a migration rewrites. */
export function toPersistedState(compact: CompactSnapshot): PersistedState {
  return { value: compact[0], context: compact[1] };
}

/**
 * Rebuild the persisted snapshot XState's `createActor(..., { snapshot })` takes. An actor
 * restored from a value naming states the machine lacks starts in status `error`.
 */
export function expandSnapshot(compact: CompactSnapshot): Snapshot<unknown> {
  const [value, context, history] = compact;
  return {
    status: 'active',
    value,
    context,
    historyValue: history ?? {},
    children: {},
  } as unknown as Snapshot<unknown>;
}
