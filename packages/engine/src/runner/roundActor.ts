/**
 * The actor a round plays on: created on an inert clock (deadlines are the
 * round's business, `round/timers.ts`), and observed only when the runner
 * inspects or audits, since inspection costs an event per microstep. Changes
 * with XState's actor creation or inspection.
 */
import {
  type AnyActorRef,
  type AnyStateMachine,
  createActor,
  type InspectionEvent,
  type Snapshot,
  type StateValue,
} from 'xstate';
import {
  type InspectionForward,
  type InspectionObserver,
  inspectDirectly,
  type Redaction,
  stableInspector,
} from '../inspection/inspector.js';
import { inertClock } from '../round/timers.js';

/**
 * A round's actor, on an inert clock. Inspection costs an event per microstep, so it is attached
 * only when `observe` asks for an inspector (reporting under the session `baton:<fid>`) or the
 * audit trail (which records the root's state values into `path`).
 */
export function createRoundActor(
  machine: AnyStateMachine,
  from: { snapshot: Snapshot<unknown> } | { input: unknown },
  observe:
    | {
        fid: string;
        path: StateValue[];
        forward: InspectionForward | undefined;
        audit: boolean;
        redaction: Redaction | undefined;
      }
    | undefined,
): AnyActorRef {
  // Options written out rather than spread from `from`: this runs every round.
  if (!observe) {
    return createActor(
      machine,
      'snapshot' in from ? { snapshot: from.snapshot, clock: inertClock } : { input: from.input, clock: inertClock },
    );
  }
  const { fid, path } = observe;
  const forward = observe.forward ? stableInspector(fid, observe.forward, observe.redaction) : undefined;
  // A restored actor is created without `inspect` (XState's dispatch is the costly part) and
  // reports its construction after; a fresh one runs its initial microsteps while constructed.
  const restored = 'snapshot' in from;
  // Without the audit trail nothing records the path: the inspector gets the events as they come.
  if (!observe.audit && forward) {
    const options = restored ? { ...from, clock: inertClock } : { ...from, clock: inertClock, inspect: forward };
    const actor = createActor(machine, options);
    forward.attach(actor, restored);
    return actor;
  }
  const inspect: InspectionObserver = (event: InspectionEvent) => {
    if (event.type === '@xstate.snapshot' && event.actorRef.sessionId === event.rootId) {
      const value = (event.snapshot as { value?: StateValue }).value;
      const last = path[path.length - 1];
      if (value !== undefined && JSON.stringify(value) !== JSON.stringify(last)) path.push(value);
    }
    forward?.next(event);
  };
  const actor = createActor(
    machine,
    restored ? { ...from, clock: inertClock } : { ...from, clock: inertClock, inspect },
  );
  inspectDirectly(actor, inspect, restored);
  return actor;
}
