/**
 * The runner's side of the decisions port (`decisions/port.ts`): the one
 * object the flow round entry (`serve.ts`), parked rounds and the decision
 * tools share. It lends them the runner's state and implements the port's
 * operations on it: `play` (one round of a flow on a fresh or restored actor,
 * abandoned on a ledger outage, and held, bounded, until a deferring
 * inspector has the round's events), `accepts`, `audit` (`audit.ts`), `rounds`
 * (the audit trail of one instance, for the requester's run status) and `newId`. Changes with what the port offers.
 */
import { type AnyMachineSnapshot, createActor } from 'xstate';
import type { AuditRound, DecisionsPort, PlayInput } from '../decisions/port.js';
import { flushInspector } from '../inspection/inspector.js';
import { Round, type RoundEnd } from '../round/play.js';
import { expandSnapshot } from '../round/snapshot.js';
import { inertClock } from '../round/timers.js';
import { RoundSteps, withRunningSteps } from '../steps/durableSteps.js';
import { appendAudit } from './audit.js';
import { createRoundActor } from './roundActor.js';
import { newId, type RunnerState } from './state.js';

/** Implement the decisions port on the runner's state. */
export function createDecisionsPort(state: RunnerState): DecisionsPort {
  return {
    flows: state.flows,
    codec: state.codec,
    ledger: state.ledger,
    now: state.now,
    log: state.log,
    settings: state.settings,
    singleUse: state.singleUse,
    decisions: state.decisions,
    newId,
    accepts(flow, body, event) {
      const actor = createActor(state.machines.get(flow.name)!, {
        snapshot: withRunningSteps(expandSnapshot(body.s), body.r),
        clock: inertClock,
      });
      return (actor.getSnapshot() as AnyMachineSnapshot).can(event);
    },
    play: (input) => play(state, input),
    audit: (round: AuditRound) => appendAudit(state, round),
    rounds: async (fid) => {
      if (!state.auditLog) return [];
      try {
        return await state.auditLog.rounds(fid);
      } catch (error) {
        state.log({ type: 'flow_error', flow: '', fid, error });
        return [];
      }
    },
  };
}

/** Play one round on a fresh actor (observed when the runner inspects or audits); see `DecisionsPort.play`. */
function play(state: RunnerState, input: PlayInput): Promise<RoundEnd> {
  const { flow, fid, path } = input;
  const machine = state.machines.get(flow.name)!;
  const observe =
    state.inspect !== undefined || state.auditLog !== undefined
      ? {
          fid,
          path,
          forward: state.forward,
          audit: state.auditLog !== undefined,
          redaction: state.redactions.get(flow.name),
        }
      : undefined;
  const restored = 'body' in input.from ? input.from : undefined;
  const actor =
    input.restoredActor && restored && !observe
      ? input.restoredActor
      : createRoundActor(
          machine,
          restored
            ? { snapshot: withRunningSteps(expandSnapshot(restored.body.s), restored.body.r) }
            : { input: (input.from as { input: unknown }).input },
          observe,
        );
  const steps = new RoundSteps(state.stepSettings, fid, flow.name, restored?.body.k);
  const played = new Round(state.settings, {
    flow,
    binding: input.binding,
    fid,
    round: input.round,
    capabilities: input.capabilities,
    answers: input.answers,
    restored,
    received: input.received,
    ...(input.inject ? { inject: input.inject } : {}),
    ...(input.parkStepsAfterMs === undefined ? {} : { parkStepsAfterMs: input.parkStepsAfterMs }),
    ...(input.onProgress ? { onProgress: input.onProgress } : {}),
    steps,
  }).play(actor);
  // A step met a ledger outage: abandon the round whatever the machine made of it (`releaseAfterOutage`, `round/singleUse.ts`).
  const ended = state.ledger
    ? played.then((end) => {
        if (steps.unavailable) throw steps.unavailable;
        return end;
      })
    : played;
  const inspector = state.inspect;
  // The answer must not overtake the round's inspection events: wait (bounded) for them.
  if (!inspector || !state.deferring) return ended;
  return ended.then(async (end) => {
    await flushInspector(inspector);
    return end;
  });
}
