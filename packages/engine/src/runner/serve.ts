/**
 * The flow round entry: `run()` checks the client's input and the flow's need
 * of a ledger, binds the call, and `serve()` plays one round of a flow from
 * end to end: open and verify the presented state, restore the machine to
 * find the keys it awaits, redeem the state once (`round/singleUse.ts`), play
 * the round (on the port, or through `decisions/requesterRound.ts` for a flow
 * that parks), then log it and append its audit entry. `baton_resume` serves
 * its round here too (`via: 'resume'`). Changes with the path of one round.
 */
import type { AnyActorRef, AnyMachineSnapshot, StateValue } from 'xstate';
import { needsLedgerOnlyForSteps } from '../authoring/flow.js';
import type { Flow } from '../authoring/flowTypes.js';
import type { StateBinding } from '../codec/types.js';
import type { AuditAnswer, AuditVia } from '../contract/audit.js';
import type { CallContext, RunRequest } from '../contract/call.js';
import type { ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { enqueueRoundNotifications } from '../decisions/outbox.js';
import { openParked } from '../decisions/parked.js';
import type { DecisionsPort } from '../decisions/port.js';
import { type RequesterRound, requesterRound } from '../decisions/requesterRound.js';
import { taskOf } from '../decisions/taskStatus.js';
import { FlowError } from '../errors.js';
import { callerKeys, readAnswers } from '../round/body.js';
import { checkRoundInput } from '../round/clientInput.js';
import { mintedExpiry } from '../round/play.js';
import { isPureFrom } from '../round/purity.js';
import { openRoundState, redeemOnce, rejectState } from '../round/singleUse.js';
import { expandSnapshot } from '../round/snapshot.js';
import { epochMs, RoundTrace, SPAN, tracing } from '../telemetry/tracing.js';
import { createRoundActor } from './roundActor.js';
import { newId, type RunnerState } from './state.js';

/** A flow declared `needsLedger` on a runner without one: an error round, in words, before anything runs. */
function needsLedger(state: RunnerState, flow: Flow): RoundOutcome {
  const error = new FlowError(
    `"${flow.name}" needs a ledger and this server has none: the server must run with a ledger (baton serve --ledger URL).`,
  );
  const fid = newId();
  state.log({ type: 'flow_error', flow: flow.name, fid, error });
  return { type: 'error', flow: flow.name, fid, round: 1, message: error.message };
}

/** Serve one request of a flow: `Runner.run`. */
export async function run(state: RunnerState, port: DecisionsPort, request: RunRequest): Promise<RoundOutcome> {
  const flow = state.flows.get(request.flow);
  if (!flow) throw new Error(`unknown flow "${request.flow}"`);
  // Bounded and iterative, before anything recursive (binding, digest, zod) walks client input.
  checkRoundInput(request.args, request.inputResponses);
  if (flow.needsLedger && !state.ledger && !(state.allowReplays && needsLedgerOnlyForSteps(flow))) {
    return needsLedger(state, flow);
  }
  const { context } = request;
  const binding: StateBinding = {
    principal: context.principal,
    flow: flow.name,
    method: context.method,
    target: context.target,
    args: request.args,
  };
  return serve(state, port, flow, binding, context, request.requestState, request.inputResponses);
}

/**
 * Serve one round of `flow` for `binding`: from a presented state, a fresh start, or (resume)
 * the parked request `resumeRow`. `via`: whose call it is, for the audit trail.
 */
export async function serve(
  state: RunnerState,
  port: DecisionsPort,
  flow: Flow,
  binding: StateBinding,
  context: Pick<CallContext, 'principal' | 'capabilities' | 'tasks' | 'onProgress'>,
  requestState: string | undefined,
  inputResponses: Readonly<Record<string, unknown>> | undefined,
  resumeRow?: ParkedRequest,
  via: AuditVia = 'call',
): Promise<RoundOutcome> {
  const { ledger, log, now } = state;
  const started = now();
  // With an OpenTelemetry SDK registered only: the round's span (`telemetry/tracing.ts`).
  const traced = tracing() ? new RoundTrace() : undefined;
  const traceStart = (fid?: string, round?: number) => ({
    flow: flow.name,
    via,
    method: binding.method,
    target: binding.target,
    principalHash: port.codec.digest(context.principal, 'audit-principal'),
    ...(fid === undefined ? {} : { fid }),
    ...(round === undefined ? {} : { round }),
  });
  // 1-2. Verify the envelope, its binding and the definition.
  const openedAt = traced ? epochMs() : 0;
  let opened: ReturnType<typeof openRoundState> | undefined;
  try {
    opened = requestState === undefined ? undefined : openRoundState(port.singleUse, flow, requestState, binding);
  } catch (error) {
    if (traced) {
      traced.mark(SPAN.open, openedAt, epochMs());
      traced.begin(traceStart(resumeRow?.id), undefined);
      traced.end(undefined, error);
    }
    throw error;
  }
  const fid = opened?.claims.fid ?? resumeRow?.id ?? newId();
  const round = (opened?.claims.round ?? 0) + 1;
  if (traced) {
    if (opened) traced.mark(SPAN.open, openedAt, epochMs());
    // The instance's trace: in the presented state, or (resume) in the parked request.
    const instance = opened ? opened.body.tc : resumeRow ? openParked(port.codec, resumeRow)?.s.tc : undefined;
    traced.begin(traceStart(fid, round), instance);
  }
  const base = { flow: flow.name, fid, round };
  const path: StateValue[] = [];
  const received: AuditAnswer[] = [];
  // A round on a parked instance says there which state it found (see `RequesterRound.audit`).
  let audited: RequesterRound['audit'] | undefined;

  // Restore the machine to check the snapshot and find the keys the state awaits (nothing runs
  // before start()). A round that plays this very body unobserved plays this actor after
  // redeeming (still unstarted: nothing ran); any other restores afresh.
  let pending: readonly string[] = [];
  let restoredActor: AnyActorRef | undefined;
  if (opened) {
    restoredActor = createRoundActor(
      state.machines.get(flow.name)!,
      { snapshot: expandSnapshot(opened.body.s) },
      undefined,
    );
    const snapshot = restoredActor.getSnapshot() as AnyMachineSnapshot;
    if (snapshot.status === 'error') {
      rejectState(log, flow.name, 'bad_snapshot', 'the state value names states the machine does not have');
    }
    const held = opened.body.h ?? {};
    const awaited = callerKeys(flow, snapshot);
    pending = opened.body.h ? awaited.filter((key) => !Object.hasOwn(held, key)) : awaited;
    // Running durable steps are restored into the snapshot's children: that needs its own actor.
    if (opened.body.r !== undefined) restoredActor = undefined;
  }

  // The answers this round may deliver (own properties only: see readAnswers): on a resumed
  // round those to the keys the state awaits, on a first call any (the round picks what the
  // flow asks first; a resume's first call none). The retry digest covers exactly these.
  const answers = readAnswers(inputResponses, opened ? pending : resumeRow ? [] : undefined);
  const parsedArgs = opened || resumeRow ? undefined : flow.args.safeParse(binding.args ?? {});
  const parks = (flow.decisions.length > 0 || flow.events.length > 0 || flow.steps.length > 0) && ledger !== undefined;
  // A round that can have no side effect of its own is played first and redeemed with its
  // outcome (`round/purity.ts`); not one an inspector watches, which would see a round that may
  // then be discarded, nor one of a flow with decisions or steps, whose rounds read the ledger.
  const deferrable =
    opened !== undefined &&
    ledger !== undefined &&
    state.inspect === undefined &&
    flow.decisions.length === 0 &&
    flow.steps.length === 0 &&
    isPureFrom(state.machines.get(flow.name)!, opened.body.s[0]);
  // 3. Redeem before any side effect (`round/singleUse.ts`), then play.
  // The outcome of this request's own round (not one answered from the ledger): set by the play callback.
  let own: RoundOutcome | undefined;
  const playRound = async (roundPort: DecisionsPort): Promise<RoundOutcome> => {
    // Played a second time (a deferred round stopped at its first ledger call, whose state then
    // turned out released): afresh, with a new actor and nothing of the first attempt recorded.
    const actor = restoredActor;
    restoredActor = undefined;
    path.length = 0;
    received.length = 0;
    if (parsedArgs && !parsedArgs.success) {
      const issues = parsedArgs.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
      return { type: 'error', ...base, message: `Invalid arguments: ${issues.join('; ')}` };
    }
    if (parks) {
      audited = { received, path };
      return requesterRound(roundPort, {
        flow,
        binding,
        context,
        fid,
        round,
        presented: opened ? { body: opened.body, pending } : undefined,
        input: parsedArgs?.data,
        answers,
        ...(resumeRow ? { resumeRow } : {}),
        ...(actor ? { restoredActor: actor } : {}),
        audit: audited,
      });
    }
    const end = await roundPort.play({
      flow,
      binding,
      fid,
      round,
      capabilities: context.capabilities,
      ...(context.onProgress ? { onProgress: context.onProgress } : {}),
      answers,
      from: opened ? { body: opened.body, pending } : { input: parsedArgs?.data },
      received,
      path,
      ...(actor ? { restoredActor: actor } : {}),
    });
    // No parked request to carry them: what the round announced goes to the outbox on its own.
    if (end.notifications.length > 0) await enqueueRoundNotifications(roundPort, base, end.notifications);
    return end.type === 'done'
      ? end.outcome
      : end.type === 'ask'
        ? end.mint()
        : end.type === 'working'
          ? { type: 'error', ...base, message: `The flow "${flow.name}" did not finish its steps in time.` }
          : end.events.length > 0
            ? needsLedger(state, flow)
            : { type: 'error', ...base, message: `The flow "${flow.name}" awaits a decision it does not declare.` };
  };
  const redeem = () =>
    redeemOnce(
      port.singleUse,
      { flow, fid, round, claims: opened?.claims, answers, started, parks, deferrable },
      async (roundLedger) =>
        (own = await playRound(roundLedger === port.ledger ? port : { ...port, ledger: roundLedger })),
    );
  let outcome: RoundOutcome;
  if (traced) {
    try {
      outcome = await traced.run(redeem);
    } catch (error) {
      traced.end(undefined, error);
      throw error;
    }
    traced.end({
      outcome: taskOf(outcome) ? 'task' : outcome.type,
      before: audited?.before ?? (opened ? opened.body.s[0] : null),
    });
  } else {
    outcome = await redeem();
  }
  // Refused before redeeming (logged there), or answered from the record: nothing to log or audit.
  if (own === undefined || outcome !== own) return outcome;
  log({ type: 'round', flow: flow.name, fid, round: outcome.round, outcome: outcome.type, ms: now() - started });
  // Without an audit log there is nothing to assemble (nor an await to pay for).
  if (state.auditLog) {
    await port.audit({
      flow,
      fid,
      round: audited?.round ?? outcome.round,
      started,
      principal: context.principal,
      via,
      before: audited?.before ?? (opened ? opened.body.s[0] : null),
      ...(audited?.after === null ? { after: null } : {}),
      path,
      asked: outcome.type === 'input_required' ? Object.keys(outcome.inputRequests) : [],
      received,
      outcome: outcome.type,
      ...(outcome.type === 'error' ? { message: outcome.message } : {}),
      ...(parsedArgs?.success ? { args: parsedArgs.data } : {}),
      ...(outcome.type === 'input_required' ? { expiresAt: mintedExpiry(outcome) } : {}),
    });
  }
  return outcome;
}
