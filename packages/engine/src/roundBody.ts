/**
 * What the engine keeps inside a requestState between two rounds, and the
 * questions the runner asks of a machine's state. The body holds the compact
 * snapshot, the pending deadlines and the answers already received and valid;
 * the keys a state waits for are not stored: they follow from the state value
 * through the machine's `meta.ask`.
 */
import type { AnyMachineSnapshot, AnyStateMachine } from 'xstate';
import type { RequestStateClaims } from './codec/types.js';
import { type CompactSnapshot, isCompactSnapshot } from './compactSnapshot.js';
import { type Deadline, isDeadlineList } from './durableTimers.js';
import { InvalidRequestStateError } from './errors.js';

/** The engine's payload inside a requestState. */
export interface RoundBody {
  /** Compact snapshot. */
  s: CompactSnapshot;
  /** Pending deadlines. */
  t?: Deadline[];
  /** Raw answers already received and valid, held until the rest arrive. */
  h?: Record<string, unknown>;
}

/**
 * The body of an opened (authenticated) state.
 * @throws InvalidRequestStateError('bad_snapshot') when it is not shaped like one.
 */
export function readBody(claims: RequestStateClaims): RoundBody {
  const body = claims.body as Partial<RoundBody> | null;
  const ok =
    typeof body === 'object' &&
    body !== null &&
    isCompactSnapshot(body.s) &&
    (body.t === undefined || isDeadlineList(body.t)) &&
    (body.h === undefined || (typeof body.h === 'object' && body.h !== null && !Array.isArray(body.h)));
  if (!ok) throw new InvalidRequestStateError('bad_snapshot');
  return body as RoundBody;
}

/** Keys asked by the active states (`meta.ask`), in document order, without duplicates. */
export function askedKeys(snapshot: AnyMachineSnapshot): string[] {
  const keys = new Set<string>();
  for (const meta of Object.values(snapshot.getMeta() as Record<string, { ask?: string[] } | undefined>)) {
    for (const key of meta?.ask ?? []) keys.add(key);
  }
  return [...keys];
}

/**
 * The machine's output. XState takes it from the root `output` only; Baton also accepts the
 * `output` of the top-level final state reached (a constant or a function of `{ context }`),
 * so each ending of a flow can say what it returns.
 */
export function machineOutput(machine: AnyStateMachine, snapshot: AnyMachineSnapshot): unknown {
  if (snapshot.output !== undefined || machine.config.output !== undefined) return snapshot.output;
  if (typeof snapshot.value !== 'string') return undefined;
  const output = machine.root.states[snapshot.value]?.output;
  return typeof output === 'function'
    ? (output as (args: { context: unknown }) => unknown)({ context: snapshot.context })
    : output;
}
