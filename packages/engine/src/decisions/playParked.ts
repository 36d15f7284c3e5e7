/**
 * The write-back of a round played on a flow instance that awaits others.
 * Once such an instance reaches a state that awaits only decisions (or
 * durable steps that outlive the round) it is parked in the ledger, and from
 * then on the parked request is the instance's source of truth: every round
 * (the requester's, a decider's, a withdrawal) starts from its latest parked
 * state (`currentBody`, migrated when needed), delivers the recorded
 * decisions it awaits (`recordedDecisions`), and `playParked` writes the
 * result back with compare-and-set on the request's version (a conflict
 * answers `conflict`, and the caller replays the round from the newer state),
 * requesting the decisions newly awaited. Who holds the round and how it is
 * answered is `requesterRound.ts`'s job and the decision tools'.
 */

import type { Span } from '@opentelemetry/api';
import type { AnyActorRef, StateValue } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { StateBinding } from '../codec/types.js';
import type { AuditAnswer } from '../contract/audit.js';
import type { CallContext } from '../contract/call.js';
import type { DecisionRecord, FullLedger, ParkedRequest, ParkResult, RequestStatus } from '../contract/ledger.js';
import { type Answers, type RoundBody, readAnswers } from '../round/body.js';
import type { AwaitedDecision, AwaitedEvent, InjectedDecision, RoundEnd } from '../round/play.js';
import { migratedSnapshot } from '../round/singleUse.js';
import { nextDue } from '../round/timers.js';
import { ATTR, childSpan, SPAN, spanned } from '../telemetry/tracing.js';
import { lookbackEvent } from './lookback.js';
import { enqueueRoundNotifications, outboxMessages } from './outbox.js';
import {
  type FinalOutcome,
  openDecision,
  type ParkedBlob,
  parkedBody,
  parkedExpiry,
  principalHash,
  sealParked,
  statusAfter,
  toParkedBinding,
  waitingForOf,
} from './parked.js';
import { callHook, type DecisionsPort } from './port.js';
import { TASK_AFTER_MS } from './taskStatus.js';

/** The parked body the current definition can run: as parked, or migrated; `undefined` when neither. */
export function currentBody(flow: Flow, blob: ParkedBlob): RoundBody | undefined {
  if (blob.h === flow.hash) return blob.s;
  const migrated = migratedSnapshot(flow, blob.h, blob.s.s);
  return migrated && { ...blob.s, s: migrated };
}

/** Recorded decisions not yet delivered, for a round's `inject`. */
export function recordedDecisions(
  core: DecisionsPort,
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
    const { content, principal, quorum, onBehalfOf } = opened;
    const auditHash = (p: string) => core.codec.digest(p, 'audit-principal');
    out.set(record.key, {
      content,
      decider: principal,
      auditDecider: auditHash(principal),
      ...(onBehalfOf === undefined ? {} : { onBehalfOf, auditOnBehalfOf: auditHash(onBehalfOf) }),
      audit: {
        ...(record.decidedAt === null ? {} : { decidedAt: record.decidedAt }),
        ...(record.via ? { via: record.via } : {}),
        ...(quorum
          ? {
              votes: quorum.votes.map((v) => ({
                decider: auditHash(v.p),
                decidedAt: v.t,
                ...(v.w ? { via: v.w } : {}),
                approves: v.a,
              })),
            }
          : {}),
      },
      ...(quorum
        ? {
            quorum: {
              votes: quorum.votes.map((v) => ({ decider: v.p, content: v.c, decidedAt: v.t, approves: v.a })),
              approved: quorum.approved,
            },
          }
        : {}),
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
  readonly context: Pick<CallContext, 'capabilities' | 'tasks' | 'onProgress'>;
  readonly from: { readonly body: RoundBody; readonly pending: readonly string[] } | { readonly input: unknown };
  readonly answers: Answers;
  readonly inject?: Parameters<DecisionsPort['play']>[0]['inject'];
  /** An actor restored (unstarted) on exactly `from.body`: played instead of restoring it again (`PlayInput.restoredActor`). */
  readonly restoredActor?: AnyActorRef;
  /**
   * Events another system sent that the round (and the lookback rounds it chains) delivered are
   * appended here (`<name>/<id>`), for the event router's count.
   */
  readonly receivedEvents?: string[];
  /** Lookback rounds chained so far (bounded). */
  readonly lookbacks?: number;
  readonly audit: {
    received: AuditAnswer[];
    path: StateValue[];
    /** The state the round first found on the parked request (set by `requesterRound`; the audit's `before`). */
    before?: StateValue;
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
export async function playParked(core: DecisionsPort, input: ParkedPlayInput): Promise<ParkedPlay> {
  const ledger = core.ledger!;
  const { flow, parked, fid } = input;
  const end = await core.play({
    flow,
    binding: input.binding,
    fid,
    round: input.round,
    capabilities: input.context.capabilities,
    ...(input.context.onProgress ? { onProgress: input.context.onProgress } : {}),
    answers: input.answers,
    from: input.from,
    ...(input.inject ? { inject: input.inject } : {}),
    ...(input.restoredActor ? { restoredActor: input.restoredActor } : {}),
    received: input.audit.received,
    path: input.audit.path,
    // A client that follows tasks gets its task as soon as only durable steps are left running.
    ...(input.context.tasks ? { parkStepsAfterMs: TASK_AFTER_MS } : {}),
  });
  input.receivedEvents?.push(...end.received);
  const park = (
    status: RequestStatus,
    body: RoundBody,
    waiting: readonly AwaitedDecision[],
    o?: FinalOutcome,
    events: readonly AwaitedEvent[] = [],
  ) =>
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
      events,
    );

  // A round that writes nothing still delivers what it announced (`enqueueRoundNotifications`).
  const unwritten = () =>
    enqueueRoundNotifications(core, { fid, flow: flow.name, round: input.round }, end.notifications);

  if (end.type === 'done') {
    if (!end.terminal || !parked) {
      await unwritten();
      return { type: 'done', end };
    }
    const status = statusAfter(end);
    const { flow: _f, fid: _i, round: _r, ...final } = end.outcome;
    const written = await park(status, parked.blob.s, [], final as FinalOutcome);
    if (written === undefined) return { type: 'conflict' };
    // A flow that declares no decision has none to close.
    if (flow.decisions.length > 0) {
      await ledger.decisions
        .closeDecisions(fid, core.now())
        .catch((error: unknown) => core.log({ type: 'flow_error', flow: flow.name, fid, error }));
    }
    return { type: 'done', end, status };
  }
  if (end.type === 'ask') {
    if (!parked || unchanged(parked, end.body, 'waiting', [])) {
      await unwritten();
      return { type: 'ask', end, pv: parked?.row.version };
    }
    const written = await park('waiting', end.body, []);
    return written === undefined ? { type: 'conflict' } : { type: 'ask', end, pv: written.row.version };
  }
  if (end.type === 'working') {
    if (parked && unchanged(parked, end.body, 'waiting', [])) {
      await unwritten();
      return { type: 'working', end, row: parked.row };
    }
    const written = await park('waiting', end.body, []);
    return written === undefined ? { type: 'conflict' } : { type: 'working', end, row: written.row };
  }
  let now: { row: ParkedRequest; blob: ParkedBlob } | undefined = parked;
  if (!parked || !unchanged(parked, end.body, 'waiting', end.decisions, end.events)) {
    now = await park('waiting', end.body, end.decisions, undefined, end.events);
    if (now === undefined) return { type: 'conflict' };
  } else await unwritten();
  const row = now!.row;
  await requestDecisions(core, ledger, flow, row, input.requester.principal, end.decisions);
  // An event that arrived before this wait began, kept in its lookback window: delivered now.
  const late = (input.lookbacks ?? 0) < MAX_LOOKBACKS ? await lookbackEvent(core, end.body, end.events) : undefined;
  if (late) {
    // Played on from the state just parked: a new actor (`restoredActor` was this round's).
    const { restoredActor: _played, ...rest } = input;
    return playParked(core, {
      ...rest,
      parked: now,
      round: input.round + 1,
      from: { body: now!.blob.s, pending: [] },
      answers: readAnswers(undefined),
      inject: { received: late },
      lookbacks: (input.lookbacks ?? 0) + 1,
    });
  }
  return { type: 'waiting', end, row };
}

/** Lookback rounds one play chains at most (an instance that waits for event after event). */
const MAX_LOOKBACKS = 8;

/** Whether a round left a parked instance as it was (then nothing is written). */
function unchanged(
  parked: { row: ParkedRequest; blob: ParkedBlob },
  body: RoundBody,
  status: RequestStatus,
  waiting: readonly AwaitedDecision[],
  events: readonly AwaitedEvent[] = [],
): boolean {
  return (
    parked.row.status === status &&
    canonicalJson(parked.row.waitingFor) === canonicalJson(waitingForOf(waiting, events)) &&
    canonicalJson(parkedBody(body)) === canonicalJson(parked.blob.s)
  );
}

/** A parked write's span says whether it was written (`parked`) or lost the compare-and-set (`conflict`). */
const parkResultOnSpan = (span: Span, result: ParkResult) => span.setAttribute(ATTR.parkResult, result.status);

/** Park or rewrite the request; the new row, or `undefined` on a conflict. */
async function write(
  core: DecisionsPort,
  ledger: FullLedger,
  input: ParkedPlayInput,
  status: RequestStatus,
  body: RoundBody,
  waiting: readonly AwaitedDecision[],
  deadline: number | null,
  final: FinalOutcome | undefined,
  end: RoundEnd,
  events: readonly AwaitedEvent[],
): Promise<{ row: ParkedRequest; blob: ParkedBlob } | undefined> {
  const { flow, fid, requester, parked } = input;
  const now = core.now();
  // The round's notifications, written with the parked state (the outbox: `outbox.ts`).
  const outbox = outboxMessages(core, {
    flow: flow.name,
    fid,
    round: input.round,
    requesterPrincipal: requester.principal,
    status,
    before: parked?.row.status,
    awaitedBefore: parked?.row.waitingFor.map((w) => w.key) ?? [],
    awaited: waiting,
    made: end.delivered.map((key) => {
      const decided = input.inject?.decisions?.get(key);
      return { key, decider: decided?.decider, onBehalfOf: decided?.onBehalfOf };
    }),
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
    waitingFor: waitingForOf(waiting, events),
    state: sealParked(core.codec, fid, flow.name, blob),
    now,
    expiresAt: parkedExpiry(now, deadline),
    // The next durable timer, for the scheduler (`schedule/fire.ts`).
    dueAt: status === 'waiting' ? nextDue(body.t) : null,
    ...(outbox.length > 0 ? { outbox } : {}),
    // The events it waits for, replaced with every write (`ParkRequest.events`).
    ...(status === 'waiting' && events.length > 0
      ? { events: events.map((e) => ({ event: e.name, match: e.match })) }
      : {}),
  };
  const result = await spanned(
    childSpan(SPAN.park, { [ATTR.dbOperation]: 'park', [ATTR.requestStatus]: status }),
    ledger.requests.parkRequest(request, parked ? parked.row.version : null),
    parkResultOnSpan,
  );
  if (result.status === 'conflict') return undefined;
  const { now: _now, outbox: _o, events: _e, ...fields } = request;
  return {
    row: { ...fields, version: result.version, createdAt: parked?.row.createdAt ?? now, updatedAt: now },
    blob,
  };
}

/** Record the awaited decisions (once each) and tell `onDecisionRequested` about the new ones. */
async function requestDecisions(
  core: DecisionsPort,
  ledger: FullLedger,
  flow: Flow,
  row: ParkedRequest,
  requesterPrincipal: string,
  awaited: readonly AwaitedDecision[],
): Promise<void> {
  const existing = new Set((await ledger.decisions.listDecisions({ id: row.id })).map((d) => d.key));
  const fresh = awaited.filter((d) => !existing.has(d.key));
  if (fresh.length === 0) return;
  const requestedAt = core.now();
  await ledger.decisions.requestDecisions(
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
