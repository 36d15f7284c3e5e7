/**
 * Rounds of flow instances that await decisions. Once such an instance
 * reaches a state that awaits only decisions it is parked in the ledger, and
 * from then on the parked request is the instance's source of truth: every
 * round (the requester's, a decider's, a withdrawal) starts from its latest
 * parked state, delivers the recorded decisions it awaits, and writes the
 * result back with compare-and-set on the request's version (a conflict
 * replays the round from the newer state). The requester's round, when the
 * flow still waits, is held open polling the ledger, then answers "retry
 * later" (`input_required` with a fresh requestState and no requests) at most
 * three times per call, and past the call's wait completes with a "waiting"
 * result naming who must decide. Durable steps that outlive a round reuse the
 * same machinery: the instance is parked with its running steps (status
 * `waiting`, nothing in `waitingFor`), the round is held while it polls the
 * ledger for their records, then answers "retry later", and past the call's
 * wait completes with a "working" result (`{ status: 'working', id, steps }`)
 * that continues through `baton_resume`.
 */

import type { Flow } from '../authoring/flowTypes.js';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { StateBinding } from '../codec/types.js';
import type { CallContext } from '../contract/call.js';
import type { DecisionRecord, Ledger, ParkedRequest, RequestStatus } from '../contract/ledger.js';
import type { CompleteOutcome, ErrorOutcome, FlowResult, RoundOutcome } from '../contract/outcome.js';
import { InvalidRequestStateError } from '../errors.js';
import { type Answers, type RoundBody, readAnswers } from '../round/body.js';
import { stateLifetime } from '../round/lifetimes.js';
import type { AwaitedDecision, InjectedDecision, RoundEnd } from '../round/play.js';
import { migratedSnapshot } from '../round/singleUse.js';
import { nextDue } from '../round/timers.js';
import { outboxMessages } from './outbox.js';
import {
  type FinalOutcome,
  isRequester,
  openDecision,
  openParked,
  type ParkedBlob,
  parkedBody,
  parkedExpiry,
  principalHash,
  requesterBinding,
  sealParked,
  statusAfter,
  toParkedBinding,
  unknownParkedKey,
  waitingForOf,
} from './parked.js';
import { callHook, type RunnerCore } from './port.js';

/** How many times a round is replayed from a newer parked state before it gives up (bounds how long a round runs). */
export const MAX_ATTEMPTS = 8;

/** Who decides what a waiting request waits for, in words. */
export function describeWaiting(waitingFor: readonly { key: string; role?: string }[]): string {
  const parts = waitingFor.map(({ key, role }) =>
    role === undefined ? `a decision (${key})` : `a decision by someone with the role "${role}" (${key})`,
  );
  return parts.join(' and ');
}

/** The complete result of a call whose wait ran out: who must decide, and how to continue. */
export function waitingResult(id: string, waitingFor: readonly { key: string; role?: string }[]): FlowResult {
  const resume = `Continue later with baton_resume ${JSON.stringify({ id })}.`;
  const text =
    waitingFor.length > 0
      ? `Waiting for ${describeWaiting(waitingFor)} on request ${id}. ${resume}`
      : `Request ${id} is waiting for you. ${resume}`;
  return {
    content: [{ type: 'text', text }],
    structuredContent: { status: 'waiting', id, waitingFor: waitingFor.map((w) => ({ ...w })) },
  };
}

/** The complete result of a call whose wait ran out while durable steps still run. */
export function workingResult(id: string, steps: readonly string[]): FlowResult {
  const names = [...new Set(steps.map((key) => key.replace(/#\d+$/, '')))];
  const what = names.length > 0 ? ` (${names.join(', ')})` : '';
  return {
    content: [
      {
        type: 'text',
        text: `Still working on request ${id}${what}. Continue later with baton_resume ${JSON.stringify({ id })}.`,
      },
    ],
    structuredContent: { status: 'working', id, steps: names },
  };
}

/** A parked instance's final outcome as this round's outcome. */
export function finalOutcome(
  blob: ParkedBlob,
  base: { flow: string; fid: string; round: number },
  status: RequestStatus,
) {
  const final: FinalOutcome = blob.o ?? {
    type: 'error',
    message: `Request ${base.fid} has ended (${status}).`,
  };
  return { ...final, ...base } as CompleteOutcome | ErrorOutcome;
}

/** The parked body the current definition can run: as parked, or migrated; `undefined` when neither. */
export function currentBody(flow: Flow, blob: ParkedBlob): RoundBody | undefined {
  if (blob.h === flow.hash) return blob.s;
  const migrated = migratedSnapshot(flow, blob.h, blob.s.s);
  return migrated && { ...blob.s, s: migrated };
}

/** Recorded decisions not yet delivered, for a round's `inject`. */
export function recordedDecisions(
  core: RunnerCore,
  decisions: readonly DecisionRecord[],
  body: RoundBody,
): Map<string, InjectedDecision> {
  const delivered = new Set(body.d ?? []);
  const out = new Map<string, InjectedDecision>();
  for (const record of decisions) {
    if (record.status !== 'decided' || delivered.has(record.key)) continue;
    const opened = openDecision(core.codec, record);
    if (!opened) {
      core.log({
        type: 'flow_error',
        flow: record.flow,
        fid: record.id,
        error: new Error(
          `the recorded decision "${record.key}" does not open: the ledger was altered, or its key left the ring`,
        ),
      });
      continue;
    }
    const { content, principal } = opened;
    out.set(record.key, {
      content,
      decider: principal,
      auditDecider: core.codec.digest(principal, 'audit-principal'),
    });
  }
  return out;
}

/** What one round played on a (maybe) parked instance came to (`playParked`). */
export type ParkedPlay =
  /** Someone wrote the request first: read it again and replay. */
  | { readonly type: 'conflict' }
  /** The round ended with an outcome (final or not); written back when it ended the flow. */
  | { readonly type: 'done'; readonly end: Extract<RoundEnd, { type: 'done' }>; readonly status?: RequestStatus }
  /** The caller must answer; `pv`: the parked version to mint into the state (when parked). */
  | { readonly type: 'ask'; readonly end: Extract<RoundEnd, { type: 'ask' }>; readonly pv: number | undefined }
  /** Only decisions are awaited; the request is parked at `row`. */
  | {
      readonly type: 'waiting';
      readonly end: Extract<RoundEnd, { type: 'decisions' }>;
      readonly row: ParkedRequest;
    }
  /** Durable steps outlived the round; the instance is parked at `row` with them. */
  | { readonly type: 'working'; readonly end: Extract<RoundEnd, { type: 'working' }>; readonly row: ParkedRequest };

/** What {@link playParked} plays. */
export interface ParkedPlayInput {
  readonly flow: Flow;
  /** The parked request as read, with its opened blob; absent before the instance is first parked. */
  readonly parked: { readonly row: ParkedRequest; readonly blob: ParkedBlob } | undefined;
  /** The requester's binding (what is parked). */
  readonly requester: StateBinding;
  /** The binding of states minted for this round's caller. */
  readonly binding: StateBinding;
  readonly fid: string;
  readonly round: number;
  readonly context: Pick<CallContext, 'capabilities'>;
  readonly from: { readonly body: RoundBody; readonly pending: readonly string[] } | { readonly input: unknown };
  readonly answers: Answers;
  readonly inject?: Parameters<RunnerCore['play']>[0]['inject'];
  readonly audit: {
    received: import('../contract/audit.js').AuditAnswer[];
    path: import('xstate').StateValue[];
    /** The state the round first found on the parked request (set by `requesterRound`; the audit's `before`). */
    before?: import('xstate').StateValue;
    /**
     * `null` when the round found the request ended by another call's round (a decider's, say),
     * which has the state it ended in: this round cannot know it (set by `requesterRound`).
     */
    after?: null;
    /**
     * The number the round was served under: its first attempt's (set by `requesterRound`). A
     * replay from a newer parked state mints later numbers, but the round began before the other
     * call's round that moved the request, and its audit entry says so.
     */
    round?: number;
  };
}

/**
 * Play one round and write the instance back: parked when it awaits only decisions, rewritten
 * (compare-and-set) when it was parked already and changed, ended (status, final outcome,
 * pending decisions closed) when it ended. Decisions newly awaited are requested.
 */
export async function playParked(core: RunnerCore, input: ParkedPlayInput): Promise<ParkedPlay> {
  const ledger = core.ledger!;
  const { flow, parked, fid } = input;
  const end = await core.play({
    flow,
    binding: input.binding,
    fid,
    round: input.round,
    capabilities: input.context.capabilities,
    answers: input.answers,
    from: input.from,
    ...(input.inject ? { inject: input.inject } : {}),
    received: input.audit.received,
    path: input.audit.path,
  });
  const park = (status: RequestStatus, body: RoundBody, waiting: readonly AwaitedDecision[], o?: FinalOutcome) =>
    write(
      core,
      ledger,
      input,
      status,
      body,
      waiting,
      end.type === 'decisions' ? (end.decisions[0]?.deadline ?? null) : null,
      o,
      end,
    );

  if (end.type === 'done') {
    if (!end.terminal || !parked) return { type: 'done', end };
    const status = statusAfter(end);
    const { flow: _f, fid: _i, round: _r, ...final } = end.outcome;
    const written = await park(status, parked.blob.s, [], final as FinalOutcome);
    if (written === undefined) return { type: 'conflict' };
    await ledger
      .closeDecisions(fid, core.now())
      .catch((error: unknown) => core.log({ type: 'flow_error', flow: flow.name, fid, error }));
    return { type: 'done', end, status };
  }
  if (end.type === 'ask') {
    if (!parked) return { type: 'ask', end, pv: undefined };
    if (unchanged(parked, end.body, 'waiting', [])) return { type: 'ask', end, pv: parked.row.version };
    const written = await park('waiting', end.body, []);
    return written === undefined ? { type: 'conflict' } : { type: 'ask', end, pv: written.version };
  }
  if (end.type === 'working') {
    if (parked && unchanged(parked, end.body, 'waiting', [])) return { type: 'working', end, row: parked.row };
    const written = await park('waiting', end.body, []);
    return written === undefined ? { type: 'conflict' } : { type: 'working', end, row: written };
  }
  let row: ParkedRequest | undefined = parked?.row;
  if (!parked || !unchanged(parked, end.body, 'waiting', end.decisions)) {
    row = await park('waiting', end.body, end.decisions);
    if (row === undefined) return { type: 'conflict' };
  }
  await requestDecisions(core, ledger, flow, row!, input.requester.principal, end.decisions);
  return { type: 'waiting', end, row: row! };
}

/** Whether a round left a parked instance as it was (then nothing is written). */
function unchanged(
  parked: { row: ParkedRequest; blob: ParkedBlob },
  body: RoundBody,
  status: RequestStatus,
  waiting: readonly AwaitedDecision[],
): boolean {
  return (
    parked.row.status === status &&
    canonicalJson(parked.row.waitingFor) === canonicalJson(waitingForOf(waiting)) &&
    canonicalJson(parkedBody(body)) === canonicalJson(parked.blob.s)
  );
}

/** Park or rewrite the request; the new row, or `undefined` on a conflict. */
async function write(
  core: RunnerCore,
  ledger: Ledger,
  input: ParkedPlayInput,
  status: RequestStatus,
  body: RoundBody,
  waiting: readonly AwaitedDecision[],
  deadline: number | null,
  final: FinalOutcome | undefined,
  end: RoundEnd,
): Promise<ParkedRequest | undefined> {
  const { flow, fid, requester, parked } = input;
  const now = core.now();
  // Timers hook (issue 23): the next due timer for the scheduler, and the round's notifications.
  const outbox = outboxMessages(core, {
    flow: flow.name,
    fid,
    round: input.round,
    requesterPrincipal: requester.principal,
    status,
    before: parked?.row.status,
    awaitedBefore: parked?.row.waitingFor.map((w) => w.key) ?? [],
    awaited: waiting,
    made: end.delivered.map((key) => ({ key, decider: input.inject?.decisions?.get(key)?.decider })),
    notifications: end.notifications,
  });
  const blob: ParkedBlob = {
    v: 1,
    b: toParkedBinding(requester),
    h: flow.hash,
    r: input.round,
    s: parkedBody(body),
    ...(final ? { o: final } : {}),
  };
  const request = {
    id: fid,
    flow: flow.name,
    requester: principalHash(core.codec, requester.principal),
    requesterName: core.decisions.storePrincipalNames ? requester.principal : null,
    status,
    waitingFor: waitingForOf(waiting),
    state: sealParked(core.codec, fid, flow.name, blob),
    now,
    expiresAt: parkedExpiry(now, deadline),
    dueAt: status === 'waiting' ? nextDue(body.t) : null,
    ...(outbox.length > 0 ? { outbox } : {}),
  };
  const result = await ledger.parkRequest(request, parked ? parked.row.version : null);
  if (result.status === 'conflict') return undefined;
  const { now: _now, outbox: _o, ...fields } = request;
  return { ...fields, version: result.version, createdAt: parked?.row.createdAt ?? now, updatedAt: now };
}

/** Record the awaited decisions (once each) and tell `onDecisionRequested` about the new ones. */
async function requestDecisions(
  core: RunnerCore,
  ledger: Ledger,
  flow: Flow,
  row: ParkedRequest,
  requesterPrincipal: string,
  awaited: readonly AwaitedDecision[],
): Promise<void> {
  const existing = new Set((await ledger.listDecisions({ id: row.id })).map((d) => d.key));
  const fresh = awaited.filter((d) => !existing.has(d.key));
  if (fresh.length === 0) return;
  const requestedAt = core.now();
  await ledger.requestDecisions(
    fresh.map((d) => ({
      id: row.id,
      key: d.key,
      flow: flow.name,
      role: d.role,
      message: d.message,
      schema: d.schema,
      requester: row.requester,
      requestedAt,
      deadline: d.deadline,
    })),
  );
  const requester =
    core.decisions.hookPrincipals === 'id' ? requesterPrincipal : principalHash(core.codec, requesterPrincipal);
  for (const d of fresh) {
    callHook(core, 'onDecisionRequested', core.decisions.onDecisionRequested, {
      id: row.id,
      key: d.key,
      flow: flow.name,
      ...(d.role === null ? {} : { role: d.role }),
      message: d.message,
      requestedAt,
      ...(d.deadline === null ? {} : { deadline: d.deadline }),
      requester,
    });
  }
}

/** The requester's round of a flow with decisions: see the module comment. */
export interface RequesterRound {
  readonly flow: Flow;
  /** The binding of the presented state, or of this call (states are minted bound to it). */
  readonly binding: StateBinding;
  readonly context: Pick<CallContext, 'capabilities'>;
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
}

/**
 * Serve the requester's round of a flow that declares decisions.
 * @throws InvalidRequestStateError('bad_integrity') when a presented state's instance is parked for someone else.
 */
export async function requesterRound(core: RunnerCore, request: RequesterRound): Promise<RoundOutcome> {
  const ledger = core.ledger!;
  const { flow, fid, binding } = request;
  const base = (round: number) => ({ flow: flow.name, fid, round });
  let round = request.round;
  let row = request.resumeRow ?? (request.presented ? await ledger.getRequest(fid) : undefined);
  // The wait budget of this call: from a "retry later" state, or starting now.
  const wait = request.presented?.body.w ?? [core.now(), 0];
  let holdUntil: number | undefined;
  let answers = request.answers;
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
      request.audit.before ??= blob.s.s[0];
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
      inject = { decisions: recordedDecisions(core, await ledger.listDecisions({ id: fid }), body) };
    } else {
      from = request.presented ?? { input: request.input };
    }
    const requester = parked ? requesterBinding(flow.name, parked.blob) : binding;
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
      audit: request.audit,
    });
    if (result.type === 'conflict') {
      // Nothing of this attempt was written: the audit trail records the replay's path only.
      request.audit.path.length = recorded[0];
      request.audit.received.length = recorded[1];
      row = await ledger.getRequest(fid);
      answers = readAnswers(undefined);
      continue;
    }
    if (result.type === 'done') return result.end.outcome;
    if (result.type === 'ask') return result.end.mint(result.pv === undefined ? undefined : { pv: result.pv });
    // Waiting on decisions or on steps: hold the round open while someone may decide or the steps finish.
    row = result.row;
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
  core: RunnerCore,
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
  ledger: Ledger,
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
    const row = await ledger.getRequest(id);
    if (row && row.version !== version) return row;
    if (row && steps.length > 0) {
      const records = await Promise.all(steps.map((key) => ledger.getStep(id, key)));
      if (records.every((record) => record !== undefined && record.status !== 'running')) return row;
    }
  }
}

function unreadable(
  core: RunnerCore,
  flow: Flow,
  base: { flow: string; fid: string; round: number },
  row: ParkedRequest,
): ErrorOutcome {
  const key = unknownParkedKey(core.codec, row);
  if (key) {
    core.log({ type: 'flow_error', flow: flow.name, fid: base.fid, error: new Error(`the parked request was ${key}`) });
    return { type: 'error', ...base, message: `Request ${base.fid} was ${key}.` };
  }
  core.log({
    type: 'flow_error',
    flow: flow.name,
    fid: base.fid,
    error: new Error('the parked request does not open: the ledger was altered, or its key left the ring'),
  });
  return {
    type: 'error',
    ...base,
    message: `Request ${base.fid} cannot be read on this server. The server log has details.`,
  };
}

function stale(core: RunnerCore, flow: Flow, base: { flow: string; fid: string; round: number }): ErrorOutcome {
  core.log({
    type: 'flow_error',
    flow: flow.name,
    fid: base.fid,
    error: new Error(`request parked by another definition of ${flow.name}; register a migration for it`),
  });
  return {
    type: 'error',
    ...base,
    message: `Request ${base.fid} was parked by an earlier version of "${flow.name}" that this server cannot continue.`,
  };
}
