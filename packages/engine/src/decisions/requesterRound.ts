/**
 * The requester's round of a flow that awaits others (decisions, or durable
 * steps that outlive a round): it plays from the latest parked state
 * (`playParked.ts`), replaying from a newer one on a conflict, at most
 * `MAX_ATTEMPTS` times. When the flow still waits, the round is held open
 * polling the ledger for a decision or the steps' records, then answers
 * "retry later" (`input_required` with a fresh requestState and no requests)
 * at most three times per call, and past the call's wait completes with a
 * "waiting" result naming who must decide, or a "working" result
 * (`{ status: 'working', id, steps }`) that continues through
 * `baton_resume` (the wording: `parkedResults.ts`).
 */

import type { AnyActorRef } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import type { StateBinding } from '../codec/types.js';
import type { CallContext } from '../contract/call.js';
import type { FullLedger, ParkedRequest } from '../contract/ledger.js';
import type { FlowResult, RoundOutcome } from '../contract/outcome.js';
import { InvalidRequestStateError } from '../errors.js';
import { type Answers, type RoundBody, readAnswers } from '../round/body.js';
import { stateLifetime } from '../round/lifetimes.js';
import { isRequester, openParked, parkedBody, requesterBinding } from './parked.js';
import { finalOutcome, stale, unreadable, waitingResult, workingResult } from './parkedResults.js';
import { currentBody, type ParkedPlayInput, playParked, recordedDecisions } from './playParked.js';
import type { DecisionsPort } from './port.js';
import { markTask, workingTask } from './taskStatus.js';

/** How many times a round is replayed from a newer parked state before it gives up (bounds how long a round runs). */
export const MAX_ATTEMPTS = 8;

/** The requester's round of a flow that awaits others: see the module comment. */
export interface RequesterRound {
  readonly flow: Flow;
  /** The binding of the presented state, or of this call (states are minted bound to it). */
  readonly binding: StateBinding;
  readonly context: Pick<CallContext, 'capabilities' | 'tasks' | 'onProgress'>;
  readonly fid: string;
  /** This round's number. */
  readonly round: number;
  /** The presented state's body and the caller keys it awaits; absent on a first call or a resume. */
  readonly presented: { readonly body: RoundBody; readonly pending: readonly string[] } | undefined;
  /** A first call's parsed arguments. */
  readonly input?: unknown;
  readonly answers: Answers;
  /** The parked request a resume starts from (already read and checked). */
  readonly resumeRow?: ParkedRequest;
  readonly audit: ParkedPlayInput['audit'];
  /**
   * An actor restored (unstarted) on exactly `presented.body`: the first attempt that plays from
   * the presented state plays it instead of restoring the same snapshot again.
   */
  readonly restoredActor?: AnyActorRef;
}

/**
 * Serve the requester's round of a flow that declares decisions.
 * @throws InvalidRequestStateError('bad_integrity') when a presented state's instance is parked for someone else.
 */
export async function requesterRound(core: DecisionsPort, request: RequesterRound): Promise<RoundOutcome> {
  const ledger = core.ledger!;
  const { flow, fid, binding } = request;
  const base = (round: number) => ({ flow: flow.name, fid, round });
  let round = request.round;
  // A flow that parks only to wait for events is parked only once it waits: a state minted before
  // (no parked version) has no row to read.
  const unparked = flow.decisions.length === 0 && flow.steps.length === 0 && request.presented?.body.pv === undefined;
  let row = request.resumeRow ?? (request.presented && !unparked ? await ledger.requests.getRequest(fid) : undefined);
  // The wait budget of this call: from a "retry later" state, or starting now.
  const wait = request.presented?.body.w ?? [core.now(), 0];
  let holdUntil: number | undefined;
  let answers = request.answers;
  let unplayed = request.restoredActor;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    let parked: ParkedPlayInput['parked'];
    let from: ParkedPlayInput['from'];
    let inject: ParkedPlayInput['inject'];
    if (row) {
      const blob = openParked(core.codec, row);
      if (!blob) return unreadable(core, flow, base(round), row);
      if (!isRequester(core.codec, blob, binding.principal)) {
        core.log({
          type: 'invalid_state',
          flow: flow.name,
          reason: 'bad_integrity',
          detail: 'parked for another principal',
        });
        throw new InvalidRequestStateError('bad_integrity');
      }
      round = Math.max(round, blob.r + 1);
      if (row.status !== 'waiting') {
        // Ended by another call's round, which the audit trail has with the state it ended in.
        request.audit.after = null;
        return finalOutcome(blob, base(round), row.status);
      }
      // The state the round first found: a first call found none (its `before` stays unset, even
      // when a later attempt replays from the request another call's round moved meanwhile).
      if (attempt === 0) request.audit.before ??= blob.s.s[0];
      const body = currentBody(flow, blob);
      if (!body) return stale(core, flow, base(round));
      parked = { row, blob: { ...blob, s: body } };
      const current = request.presented?.body.pv === row.version && attempt === 0;
      // Old states follow: a state behind the ledger continues from the latest parked state,
      // and the answers it carried (to questions of an older state) are dropped.
      if (current) from = request.presented!;
      else {
        from = { body, pending: [] };
        answers = readAnswers(undefined);
      }
      inject = { decisions: recordedDecisions(core, await ledger.decisions.listDecisions({ id: fid }), body) };
    } else {
      from = request.presented ?? { input: request.input };
    }
    const requester = parked ? requesterBinding(flow.name, parked.blob) : binding;
    // The presented state's own actor, once: a later attempt (after a conflict) restores afresh.
    const restoredActor = from === request.presented ? unplayed : undefined;
    unplayed = undefined;
    request.audit.round ??= round;
    const recorded = [request.audit.path.length, request.audit.received.length] as const;
    const result = await playParked(core, {
      flow,
      parked,
      requester,
      binding,
      fid,
      round,
      context: request.context,
      from,
      answers,
      ...(inject ? { inject } : {}),
      ...(restoredActor ? { restoredActor } : {}),
      audit: request.audit,
    });
    if (result.type === 'conflict') {
      // Nothing of this attempt was written: the audit trail records the replay's path only.
      request.audit.path.length = recorded[0];
      request.audit.received.length = recorded[1];
      row = await ledger.requests.getRequest(fid);
      answers = readAnswers(undefined);
      continue;
    }
    if (result.type === 'done') return result.end.outcome;
    if (result.type === 'ask') return result.end.mint(result.pv === undefined ? undefined : { pv: result.pv });
    // Waiting on decisions or on steps: hold the round open while someone may decide or the steps finish.
    row = result.row;
    // A client that follows tasks gets one at once, the instance being durably parked (`taskStatus.ts`).
    if (request.context.tasks) {
      const waits = result.type === 'working' ? { steps: result.end.steps } : { decisions: result.end.decisions };
      const shown =
        result.type === 'working' ? workingResult(fid, result.end.steps) : waitingResult(fid, row.waitingFor);
      const task = workingTask(row, waits, core.decisions.taskPoll);
      return markTask({ type: 'complete', ...base(round), result: shown }, task);
    }
    holdUntil ??=
      performance.now() +
      Math.max(0, Math.min(core.decisions.holdMs, core.decisions.waitInCallMs - (core.now() - wait[0])));
    const steps = result.type === 'working' ? result.end.steps : [];
    const moved = await pollForChange(ledger, fid, row.version, holdUntil, core.decisions.pollMs, steps);
    if (moved) {
      row = moved;
      answers = readAnswers(undefined);
      continue;
    }
    const final = result.type === 'working' ? workingResult(fid, result.end.steps) : waitingResult(fid, row.waitingFor);
    return retryLater(core, request, result.end.body, row, wait, round, final);
  }
  core.log({
    type: 'flow_error',
    flow: flow.name,
    fid,
    error: new Error(`request kept changing over ${MAX_ATTEMPTS} attempts`),
  });
  return { type: 'error', ...base(round), message: `Request ${fid} is changing right now; try again in a moment.` };
}

/** "Retry later" (a fresh state, no requests), or, past the call's wait, the complete "waiting" result. */
function retryLater(
  core: DecisionsPort,
  request: RequesterRound,
  body: RoundBody,
  row: ParkedRequest,
  wait: [number, number],
  round: number,
  final: FlowResult,
): RoundOutcome {
  const { flow, fid, binding } = request;
  const [first, count] = wait;
  const base = { flow: flow.name, fid, round };
  if (count >= core.decisions.maxRetryLaterRounds || core.now() - first >= core.decisions.waitInCallMs) {
    return { type: 'complete', ...base, result: final };
  }
  const next: RoundBody = { ...parkedBody(body), pv: row.version, w: [first, count + 1] };
  try {
    const { token } = core.codec.mint(
      binding,
      { fid, hash: flow.hash, round, body: next },
      // Outlives the flow's pending deadline, so this requester's next round can take the `after` branch.
      { ttlSeconds: stateLifetime(core.settings, next.t, core.now()) },
    );
    return { type: 'input_required', ...base, inputRequests: {}, requestState: token };
  } catch (error) {
    // Too large to hand out again: the request is parked, so the caller continues through baton_resume.
    core.log({ type: 'flow_error', flow: flow.name, fid, error });
    return { type: 'complete', ...base, result: final };
  }
}

/**
 * Read the request until its version moves, or every step in `steps` (keys) has a recorded
 * outcome, or `until` (performance.now() ms) passes; the request as read then, or `undefined`.
 */
async function pollForChange(
  ledger: FullLedger,
  id: string,
  version: number,
  until: number,
  pollMs: number,
  steps: readonly string[] = [],
): Promise<ParkedRequest | undefined> {
  for (;;) {
    const left = until - performance.now();
    if (left <= 0) return undefined;
    await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, left)));
    const row = await ledger.requests.getRequest(id);
    if (row && row.version !== version) return row;
    if (row && steps.length > 0) {
      const records = await Promise.all(steps.map((key) => ledger.steps.getStep(id, key)));
      if (records.every((record) => record !== undefined && record.status !== 'running')) return row;
    }
  }
}
