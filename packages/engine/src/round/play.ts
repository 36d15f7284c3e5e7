/**
 * One round of one flow, played on a live actor: start it (fresh or
 * restored), fire the deadlines that came due, validate and deliver the
 * answers, let the machine settle, and conclude `complete`, `input_required`
 * (minting the next state; a refused answer is asked again with the reason,
 * and a next state too large to mint falls back to the previous one) or
 * `error`. The runner does everything around it (opening and redeeming the
 * state, the audit trail); `oversizedAnswer` is the size check it makes
 * before redeeming. A class rather than a nest of closures: a runner plays
 * thousands of rounds a second, and one object per round is all this
 * allocates for its own bookkeeping.
 */
import { type AnyActorRef, type AnyMachineSnapshot, type EventObject, transition } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import { jsonLength } from '../authoring/inputs/answerSize.js';
import type { DecisionSpec } from '../authoring/inputs/decision.js';
import type { EventSpec } from '../authoring/inputs/event.js';
import { isNotifyEvent, NOTIFY_EVENT, type Notification } from '../authoring/notify.js';
import { isProgressEvent, PROGRESS_EVENT } from '../authoring/progress.js';
import { setStepExecutor } from '../authoring/steps.js';
import type { RequestStateCodec, StateBinding } from '../codec/types.js';
import type { AuditAnswer } from '../contract/audit.js';
import type { ClientInputCapabilities, FlowProgress, RunnerLogEvent } from '../contract/call.js';
import type { CompleteOutcome, ErrorOutcome, InputRequiredOutcome } from '../contract/outcome.js';
import type { InputKind, WireInputRequest } from '../contract/wire.js';
import { FlowError, isLedgerUnavailable, StateTooLargeError } from '../errors.js';
import { REDACTED } from '../inspection/inspector.js';
import { type RoundSteps, runningStepsOf } from '../steps/durableSteps.js';
import { activeTraceparent, childSpan, failed, SPAN, settledState } from '../telemetry/tracing.js';
import { type Answers, awaitedDecisions, awaitedEvents, callerKeys, machineOutput, type RoundBody } from './body.js';
import { deadlineBeyondCap, stateLifetime } from './lifetimes.js';
import { isSettled, settle } from './settle.js';
import { compactSnapshot } from './snapshot.js';
import { type Deadline, restoreDeadlines, trackDeadlines } from './timers.js';

/**
 * How long a round with an event to deliver (a withdrawal) lets running durable steps settle
 * first, ms: a step whose outcome is recorded already is delivered before the event.
 */
const INJECTED_EVENT_WAIT_MS = 200;

/** What every round of one runner shares. */
export interface RoundSettings {
  readonly codec: RequestStateCodec;
  readonly now: () => number;
  /** Time budget for a round's invoked promises, ms. */
  readonly budgetMs: number;
  /** Lifetime of minted states, seconds; extended to outlive a pending deadline by a grace (`lifetimes.ts`). */
  readonly ttlSeconds: number;
  /** No state lives longer, seconds; a deadline it cannot cover fails the round. */
  readonly maxTtlSeconds: number;
  readonly log: (event: RunnerLogEvent) => void;
  /** Whether minted outcomes record when their state expires (`mintedExpiry`: the audit trail reads it). */
  readonly recordExpiry?: boolean;
}

/** What one round is about. */
export interface RoundInput {
  readonly flow: Flow;
  readonly binding: StateBinding;
  readonly fid: string;
  readonly round: number;
  readonly capabilities: ClientInputCapabilities | undefined;
  /** The client's answers, read by `readAnswers` (the same the runner's retry digest covers). */
  readonly answers: Answers;
  /** The opened state's body and the keys it awaits; absent on a first call. */
  readonly restored: { readonly body: RoundBody; readonly pending: readonly string[] } | undefined;
  /** Answers received this round are appended here (for the audit trail). */
  readonly received: AuditAnswer[];
  /**
   * Flows with decisions: what to deliver after due deadlines fired and before the caller's
   * answers. `decisions`: recorded decisions by key, each delivered once, and only while the
   * machine awaits it; `event`: one more event (the requester's withdrawal); `received`: an event
   * another system sent (`event()` inputs), delivered once, only where the machine awaits it with
   * the same correlation key.
   */
  readonly inject?: {
    readonly decisions?: ReadonlyMap<string, InjectedDecision>;
    readonly event?: EventObject;
    readonly received?: ReceivedEvent;
  };
  /** The round's durable steps (see `durableSteps.ts`). */
  readonly steps: RoundSteps;
  /**
   * A round for a client that follows tasks: once only durable steps are still running this long
   * (ms), the round parks them (`working`) instead of waiting out its budget, so the call is
   * answered with a task promptly. Plain invoked promises still get the whole budget.
   */
  readonly parkStepsAfterMs?: number;
  /** Where the machine's `progress()` reports go while the round runs (the caller's request). */
  readonly onProgress?: (progress: FlowProgress) => void;
}

/** A recorded decision to deliver. */
export interface InjectedDecision {
  readonly content: unknown;
  /** The decider's principal id (in the event the machine receives). */
  readonly decider: string;
  /** The decider as the audit trail records it (a keyed hash). */
  readonly auditDecider: string;
  /** What the audit trail adds about it (schema 11): when, the channel, the votes (hashes only). */
  readonly audit?: Pick<AuditAnswer, 'decidedAt' | 'via' | 'votes'>;
  /** Quorum decisions: every vote, oldest first, and whether the quorum approved (in the event). */
  readonly quorum?: {
    readonly votes: readonly {
      readonly decider: string;
      readonly content: unknown;
      readonly decidedAt: number;
      readonly approves: boolean;
    }[];
    readonly approved: boolean;
  };
  /** Whom the decider acted for (a delegation), as the audit trail records it; absent: in their own right. */
  readonly auditOnBehalfOf?: string;
  /** That principal's id (in the `decision.made` notification, as the runner shows principals). */
  readonly onBehalfOf?: string;
}

/** An event another system sent, to deliver to an instance that awaits it. */
export interface ReceivedEvent {
  /** The event's name. */
  readonly name: string;
  /** The event's id. */
  readonly id: string;
  /** Its correlation key (`''` without one). */
  readonly match: string;
  /** Its data, as the event's schema parsed it. */
  readonly data: unknown;
}

/** How an instance's body names a delivered event (`RoundBody.e`). */
export function receivedId(name: string, id: string): string {
  return `${name}/${id}`;
}

/** An event the machine awaits, for the ledger's event waits. */
export interface AwaitedEvent {
  /** The input key (`ci`). */
  readonly key: string;
  /** The event's name (`ci.finished`). */
  readonly name: string;
  /** The correlation key the instance waits for (`''` without one). */
  readonly match: string;
  /** How long the event's lookback window is, ms. */
  readonly lookbackMs: number;
}

/** A decision the machine awaits, rendered for the ledger. */
export interface AwaitedDecision {
  readonly key: string;
  readonly role: string | null;
  readonly message: string;
  /** The decider's form (elicitation schema) as JSON text. */
  readonly schema: string;
  /** The earliest pending durable deadline (ms), or `null`. */
  readonly deadline: number | null;
}

/** What a round found on the way, whatever it ended in. */
export interface RoundFacts {
  /** Durable deadlines that came due and fired. */
  readonly fired: number;
  /** Decision keys delivered this round. */
  readonly delivered: readonly string[];
  /** Whether `inject.event` was delivered: sent to a running machine that had a transition for it. */
  readonly eventSent: boolean;
  /** Events another system sent, delivered this round (`<name>/<id>`, see {@link receivedId}). */
  readonly received: readonly string[];
  /** What the machine announced with `notify()` this round, in order. */
  readonly notifications: readonly Notification[];
}

/**
 * How a round ended.
 * - `done`: a complete or error outcome; `terminal` when the flow instance is over (it reached a
 *   final state or failed), not when the round merely could not finish (over budget, say).
 * - `ask`: the caller must answer `asked`; `mint` seals `body` (plus `extra`) into the outcome.
 * - `decisions`: only decisions by others are awaited; `body` is what to park.
 * - `working`: (with a ledger) the budget ended while only durable steps were running; `body`
 *   persists them (`r`) so a later round on any instance restores them and picks up their record.
 */
export type RoundEnd = RoundFacts &
  (
    | { readonly type: 'done'; readonly outcome: CompleteOutcome | ErrorOutcome; readonly terminal: boolean }
    | {
        readonly type: 'ask';
        readonly body: RoundBody;
        readonly asked: readonly string[];
        mint(extra?: Pick<RoundBody, 'pv'>): InputRequiredOutcome | ErrorOutcome;
      }
    | {
        readonly type: 'decisions';
        readonly body: RoundBody;
        readonly decisions: readonly AwaitedDecision[];
        /** Events awaited (another system sends them); with or without decisions. */
        readonly events: readonly AwaitedEvent[];
        readonly live: readonly Deadline[];
      }
    | { readonly type: 'working'; readonly body: RoundBody; readonly steps: readonly string[] }
  );

const MAX_FALLBACK_PASSES = 32;

/**
 * When the awaited decisions stop being decidable: the earliest live deadline whose event leaves
 * the current state (an escalation, an expiry), not one that only acts in place (a reminder);
 * the earliest of all when none is known to leave; `null` without deadlines.
 */
function decisionDeadline(snap: AnyMachineSnapshot, live: readonly Deadline[]): number | null {
  if (live.length === 0) return null;
  const leaving = live.filter((d) => {
    try {
      const [next] = transition(snap.machine, snap, d[2] ?? { type: d[0] });
      return next.status !== 'active' || JSON.stringify(next.value) !== JSON.stringify(snap.value);
    } catch {
      return true;
    }
  });
  return Math.min(...(leaving.length > 0 ? leaving : live).map((d) => d[1]));
}

const count = (n: number) => (Number.isFinite(n) ? n.toLocaleString('en-US') : 'beyond measure');

/**
 * The first answer over a size its input declares (sampling and roots answers, whose requests
 * cannot tell the user why they are asked again), as a message for the user; `undefined` when
 * none is. The runner checks this BEFORE redeeming a resumed round's state and ends the round
 * with the message: nothing ran and nothing was used up, so the same requestState still takes a
 * corrected answer.
 */
export function oversizedAnswer(flow: Flow, answers: Answers): string | undefined {
  for (const key of Object.keys(answers)) {
    const problem = flow.inputs[key]?.oversized(answers[key]);
    if (problem) {
      return `The answer to "${key}" was refused: ${problem}. Nothing was saved or used up: the flow can continue with a smaller answer.`;
    }
  }
  return undefined;
}

/**
 * An error observer, so XState does not rethrow a failing machine's error as unhandled; the
 * error itself is read off the snapshot (status `error`).
 */
const IGNORE_ERRORS = { error: () => {} };

/** Plays one round; see the module comment. */
export class Round {
  readonly #settings: RoundSettings;
  readonly #input: RoundInput;
  #deadlines: (() => Deadline[]) | undefined;

  constructor(settings: RoundSettings, input: RoundInput) {
    this.#settings = settings;
    this.#input = input;
  }

  /** Play the round on `actor` (created, not started) and stop it. */
  async play(actor: AnyActorRef): Promise<RoundEnd> {
    const { flow, restored, answers } = this.#input;
    const { now } = this.#settings;
    // Observe timers and errors (the snapshot keeps the error) before start, then fire due deadlines.
    this.#deadlines = trackDeadlines(actor, now);
    actor.subscribe(IGNORE_ERRORS);
    actor.on(NOTIFY_EVENT, (event: unknown) => {
      if (!isNotifyEvent(event)) return;
      const { type: _t, ...notification } = event;
      this.#notifications.push(notification);
    });
    const { onProgress } = this.#input;
    if (onProgress) {
      actor.on(PROGRESS_EVENT, (event: unknown) => {
        if (!isProgressEvent(event)) return;
        const { type: _t, ...report } = event;
        onProgress(report);
      });
    }
    setStepExecutor(actor.system, this.#input.steps);
    try {
      actor.start();
      if (restored?.body.t) this.#fired = restoreDeadlines(actor, restored.body.t, now());
      // Awaited only when there is something to wait for (each await is a turn of the microtask queue).
      // Durable steps still running do not hold back an event the machine takes now (a withdrawal).
      if (!this.#settledNow(actor) && !(await this.#settle(actor)) && !this.#takesInjectedEvent(actor)) {
        return this.#overBudget(actor);
      }
      if (this.#input.inject && !(await this.#deliverInjected(actor))) return this.#overBudget(actor);

      let held: Record<string, unknown> = {};
      let notes = new Map<string, string>();
      // A first call may already carry answers to what the flow asks first (clients that
      // answer ahead): they count as answers to the first round, except for inputs marked
      // `onlyWhenAsked`, whose request must be shown first. Anything else is ignored.
      if (restored || Object.keys(answers).length > 0) {
        const pending = restored
          ? restored.pending
          : callerKeys(flow, actor.getSnapshot()).filter((key) => !flow.inputs[key]!.onlyWhenAsked);
        const delivered = this.#deliverAnswers(actor, pending, restored?.body.h ?? {});
        if (delivered.complete) {
          if (!this.#settledNow(actor) && !(await this.#settle(actor))) return this.#overBudget(actor);
        } else {
          held = delivered.held;
          notes = delivered.notes;
        }
      }
      return await this.#conclude(actor, held, notes);
    } finally {
      settledState((actor.getSnapshot() as AnyMachineSnapshot).value);
      actor.stop();
    }
  }

  /**
   * Settle within the budget; `false` when over it, or when only durable steps run past
   * `parkStepsAfterMs` (or past {@link INJECTED_EVENT_WAIT_MS} when an event waits to be delivered).
   */
  async #settle(actor: AnyActorRef): Promise<boolean> {
    const { budgetMs } = this.#settings;
    const { steps } = this.#input;
    const early = this.#input.parkStepsAfterMs ?? (this.#input.inject?.event ? INJECTED_EVENT_WAIT_MS : undefined);
    if (early === undefined || !steps.durable || early >= budgetMs) return settle(actor, budgetMs);
    if (await settle(actor, early)) return true;
    if ((actor.getSnapshot() as AnyMachineSnapshot).status !== 'active') return true;
    if (runningStepsOf(actor.getPersistedSnapshot(), steps)) return false;
    return settle(actor, budgetMs - early);
  }

  /** Whether the round has an injected event (a withdrawal) the machine, running durable steps only, takes now. */
  #takesInjectedEvent(actor: AnyActorRef): boolean {
    const event = this.#input.inject?.event;
    const snap = actor.getSnapshot() as AnyMachineSnapshot;
    if (!event || snap.status !== 'active' || !snap.can(event)) return false;
    return runningStepsOf(actor.getPersistedSnapshot(), this.#input.steps) !== undefined;
  }

  #settledNow(actor: AnyActorRef): boolean {
    return isSettled(actor.getSnapshot() as AnyMachineSnapshot);
  }

  #fired = 0;
  readonly #notifications: Notification[] = [];
  readonly #delivered: string[] = [];
  #eventSent = false;
  readonly #received: string[] = [];

  // The round's facts are written out field by field in every RoundEnd (no spread of a getter's
  // object: this runs every round, and the spread showed in profiles).

  #done(outcome: CompleteOutcome | ErrorOutcome, terminal: boolean): RoundEnd {
    return {
      fired: this.#fired,
      notifications: this.#notifications,
      delivered: this.#delivered,
      eventSent: this.#eventSent,
      received: this.#received,
      type: 'done',
      outcome,
      terminal,
    };
  }

  /** Deliver recorded decisions the machine awaits (each once), then the injected event; `false`: over budget. */
  async #deliverInjected(actor: AnyActorRef): Promise<boolean> {
    const { flow, inject, restored, received } = this.#input;
    if (inject === undefined) return true;
    const already = new Set(restored?.body.d ?? []);
    for (const [key, decided] of inject?.decisions ?? []) {
      const snapshot = actor.getSnapshot() as AnyMachineSnapshot;
      if (snapshot.status !== 'active' || already.has(key)) continue;
      if (!awaitedDecisions(flow, snapshot).includes(key)) continue;
      // With `auditValues` the decision's answer is recorded too (never a sensitive one's).
      const shown = flow.auditValues
        ? { value: flow.inputs[key]?.sensitive ? REDACTED : { action: 'accept', content: decided.content } }
        : {};
      const audit = decided.audit;
      // The votes' answers, like the decision's, only with `auditValues` (never a sensitive one's).
      const votes =
        audit?.votes && flow.auditValues && !flow.inputs[key]?.sensitive
          ? audit.votes.map((v, i) => ({ ...v, value: decided.quorum?.votes[i]?.content }))
          : audit?.votes;
      received.push({
        key,
        action: 'accept',
        decider: decided.auditDecider,
        ...audit,
        ...(votes ? { votes } : {}),
        ...(decided.auditOnBehalfOf === undefined ? {} : { onBehalfOf: decided.auditOnBehalfOf }),
        ...shown,
      });
      actor.send({
        type: `input.${key}`,
        action: 'accept',
        content: decided.content,
        decider: decided.decider,
        ...(decided.quorum ? { votes: decided.quorum.votes, approved: decided.quorum.approved } : {}),
      });
      this.#delivered.push(key);
      if (!(await this.#settle(actor))) return false;
    }
    if (inject.received && !(await this.#deliverReceived(actor, inject.received))) return false;
    const now = actor.getSnapshot() as AnyMachineSnapshot;
    // Not sent where the machine cannot take it (a decision delivered above moved it on, say).
    if (inject?.event && now.status === 'active' && now.can(inject.event)) {
      actor.send(inject.event);
      this.#eventSent = true;
      if (!(await this.#settle(actor))) return false;
    }
    return true;
  }

  /**
   * Deliver an event another system sent to the first awaited event input of its name whose
   * correlation key is the event's, unless this instance received it before; `false`: over budget.
   */
  async #deliverReceived(actor: AnyActorRef, event: ReceivedEvent): Promise<boolean> {
    const { flow, restored, received } = this.#input;
    const uid = receivedId(event.name, event.id);
    if (restored?.body.e?.includes(uid) || this.#received.includes(uid)) return true;
    const snapshot = actor.getSnapshot() as AnyMachineSnapshot;
    if (snapshot.status !== 'active') return true;
    const key = awaitedEvents(flow, snapshot).find((k) => {
      const spec = flow.inputs[k] as EventSpec;
      if (spec.name !== event.name) return false;
      try {
        return spec.matchOf(snapshot.context) === event.match;
      } catch {
        return false;
      }
    });
    if (key === undefined) return true;
    const shown = flow.auditValues
      ? { value: flow.inputs[key]?.sensitive ? REDACTED : { action: 'received', data: event.data } }
      : {};
    received.push({ key, action: 'received', ...shown });
    actor.send({ type: `input.${key}`, action: 'received', data: event.data, id: event.id });
    this.#received.push(uid);
    return this.#settle(actor);
  }

  get #base() {
    const { flow, fid, round } = this.#input;
    return { flow: flow.name, fid, round };
  }

  /**
   * Validate answers for the asked keys; deliver them all, or hold the valid ones and re-ask the
   * rest (`notes`: why a refused answer is asked again). What is held is each spec's parsed
   * answer, never the raw input; held answers were validated when received and travel inside
   * the authenticated state, so they are delivered as they are.
   */
  #deliverAnswers(actor: AnyActorRef, pending: readonly string[], heldBefore: Record<string, unknown>) {
    const { flow, answers, received } = this.#input;
    const asked = callerKeys(flow, actor.getSnapshot());
    const held: Record<string, unknown> = {};
    const notes = new Map<string, string>();
    for (const key of asked) {
      const fresh = pending.includes(key) ? answers[key] : undefined;
      if (fresh === undefined) {
        if (Object.hasOwn(heldBefore, key)) held[key] = heldBefore[key];
        continue;
      }
      const parsed = flow.inputs[key]!.parse(fresh);
      if (parsed.ok) held[key] = parsed.answer;
      else notes.set(key, parsed.problem);
      const action = parsed.ok ? String((parsed.answer as { action: string }).action) : 'invalid';
      // A sensitive answer's value never reaches the audit trail.
      const value = flow.inputs[key]!.sensitive ? REDACTED : fresh;
      received.push({ key, action, ...(flow.auditValues ? { value } : {}) });
    }
    if (asked.length === 0 || Object.keys(held).length < asked.length) return { complete: false, held, notes };
    // Answers held from an earlier round are used in this one: the audit trail says so here.
    for (const key of asked) {
      if (pending.includes(key) && answers[key] !== undefined) continue;
      const answer = held[key] as { action: string };
      const value = flow.inputs[key]!.sensitive ? REDACTED : answer;
      received.push({ key, action: String(answer.action), held: true, ...(flow.auditValues ? { value } : {}) });
    }
    for (const key of asked) {
      // A previous answer may have moved the machine on; later answers go only where still asked.
      if (key !== asked[0] && !callerKeys(flow, actor.getSnapshot()).includes(key)) continue;
      actor.send({ type: `input.${key}`, ...(held[key] as object) });
    }
    return { complete: true, held: {}, notes };
  }

  async #conclude(
    actor: AnyActorRef,
    held: Record<string, unknown>,
    notes: ReadonlyMap<string, string>,
  ): Promise<RoundEnd> {
    const { flow, received } = this.#input;
    for (let pass = 0; pass < MAX_FALLBACK_PASSES; pass++) {
      const snap = actor.getSnapshot() as AnyMachineSnapshot;
      if (snap.status === 'error') return this.#failed(snap.error);
      if (snap.status === 'done') {
        const result = flow.toResult(machineOutput(flow.machine, snap));
        return this.#done({ type: 'complete', ...this.#base, result }, true);
      }
      const asked = callerKeys(flow, snap);
      const unsupported =
        this.#input.capabilities === undefined
          ? []
          : asked.filter((key) => !this.#capable(flow.inputs[key]!.kind as InputKind));
      if (unsupported.length > 0) {
        const noFallback = unsupported.find((key) => !flow.inputs[key]!.fallback);
        if (noFallback) {
          const kind = flow.inputs[noFallback]!.kind as InputKind;
          const message = `This tool needs ${kind} input ("${noFallback}"), which the client did not declare in its capabilities.`;
          return this.#done({ type: 'error', ...this.#base, message, undeclared: { key: noFallback, kind } }, false);
        }
        for (const key of unsupported) {
          received.push({ key, action: 'unsupported' });
          actor.send({ type: `input.${key}`, action: 'unsupported' });
        }
        if (!(await this.#settle(actor))) return this.#overBudget(actor);
        continue;
      }
      const live = this.#deadlines?.() ?? [];
      // A deadline computed from context may be beyond the cap (constant ones are checked at load).
      const beyondCap = deadlineBeyondCap(flow.name, this.#settings, live, this.#settings.now());
      if (beyondCap) return this.#failed(beyondCap);
      const awaited = awaitedDecisions(flow, snap);
      const events = awaitedEvents(flow, snap);
      if (asked.length === 0 && awaited.length === 0 && events.length === 0 && live.length === 0) {
        return this.#failed(
          new Error(`flow is stuck in ${JSON.stringify(snap.value)}: it neither asks for input nor ends`),
        );
      }
      // A parallel machine may ask its caller and await a decision at once: the caller goes first.
      if (asked.length === 0 && (awaited.length > 0 || events.length > 0)) {
        return this.#awaitDecisions(snap, awaited, live, events);
      }
      return this.#ask(snap, asked, held, live, notes);
    }
    return this.#failed(new Error('fallback events did not settle the flow'));
  }

  /** The body a settled machine is persisted as (in a state, or parked). */
  #body(snap: AnyMachineSnapshot, live: readonly Deadline[], held: Record<string, unknown>): RoundBody {
    const body: RoundBody = { s: compactSnapshot(snap) };
    if (live.length > 0) body.t = [...live];
    if (Object.keys(held).length > 0) body.h = held;
    const delivered = [...(this.#input.restored?.body.d ?? []), ...this.#delivered];
    if (delivered.length > 0) body.d = delivered;
    const received = [...(this.#input.restored?.body.e ?? []), ...this.#received];
    if (received.length > 0) body.e = received;
    const counts = this.#input.steps.counts;
    if (Object.keys(counts).length > 0) body.k = { ...counts };
    // The instance's trace: kept from its first traced round (nothing without tracing).
    const tc = this.#input.restored?.body.tc ?? activeTraceparent();
    if (tc) body.tc = tc;
    return body;
  }

  #awaitDecisions(
    snap: AnyMachineSnapshot,
    awaited: readonly string[],
    live: readonly Deadline[],
    awaitedKeys: readonly string[],
  ): RoundEnd {
    const { flow } = this.#input;
    const deadline = decisionDeadline(snap, live);
    const repeated = awaited.find(
      (key) => this.#input.restored?.body.d?.includes(key) || this.#delivered.includes(key),
    );
    if (repeated) {
      return this.#failed(
        new FlowError(
          `The flow "${flow.name}" awaits the decision "${repeated}" a second time; each decision is made once per request.`,
        ),
      );
    }
    let decisions: AwaitedDecision[];
    let events: AwaitedEvent[];
    try {
      events = awaitedKeys.map((key) => {
        const spec = flow.inputs[key] as EventSpec;
        return { key, name: spec.name, match: spec.matchOf(snap.context), lookbackMs: spec.lookbackMs };
      });
      decisions = awaited.map((key) => {
        const spec = flow.inputs[key] as DecisionSpec;
        return {
          key,
          role: spec.role ?? null,
          message: spec.message(snap.context),
          schema: JSON.stringify(spec.requestedSchema),
          deadline,
        };
      });
    } catch (error) {
      return this.#failed(error);
    }
    const body = this.#body(snap, live, {});
    return {
      fired: this.#fired,
      notifications: this.#notifications,
      delivered: this.#delivered,
      eventSent: this.#eventSent,
      received: this.#received,
      type: 'decisions',
      body,
      decisions,
      events,
      live,
    };
  }

  #capable(kind: InputKind): boolean {
    const { capabilities } = this.#input;
    return capabilities === undefined || capabilities[kind] === true;
  }

  #ask(
    snap: AnyMachineSnapshot,
    asked: readonly string[],
    held: Record<string, unknown>,
    live: Deadline[],
    notes: ReadonlyMap<string, string>,
  ): RoundEnd {
    const pending = Object.keys(held).length > 0 ? asked.filter((key) => !Object.hasOwn(held, key)) : asked;
    const body = this.#body(snap, live, held);
    const inputRequests = this.#requests(pending, snap.context, (key) => {
      const problem = notes.get(key);
      return problem ? `Your previous answer was not accepted (${problem}). Please answer again.` : undefined;
    });
    const mint = (extra?: Pick<RoundBody, 'pv'>): InputRequiredOutcome | ErrorOutcome => {
      let requestState: string;
      try {
        requestState = this.#seal(extra?.pv === undefined ? body : { ...body, pv: extra.pv }, live);
      } catch (error) {
        return this.#unsaved(error);
      }
      return this.#expiring({ type: 'input_required', ...this.#base, inputRequests, requestState });
    };
    return {
      fired: this.#fired,
      notifications: this.#notifications,
      delivered: this.#delivered,
      eventSent: this.#eventSent,
      received: this.#received,
      type: 'ask',
      body,
      asked: pending,
      mint,
    };
  }

  #requests(keys: readonly string[], context: unknown, note: (key: string) => string | undefined) {
    const { flow } = this.#input;
    const requests: Record<string, WireInputRequest> = {};
    for (const key of keys) requests[key] = flow.inputs[key]!.build(context, note(key));
    return requests;
  }

  /** When the state sealed last expires (ms), for the audit trail. */
  #minted = 0;

  /** `outcome`, its expiry recorded for `mintedExpiry` when the runner keeps an audit trail. */
  #expiring(outcome: InputRequiredOutcome): InputRequiredOutcome {
    if (this.#settings.recordExpiry) expiries.set(outcome, this.#minted);
    return outcome;
  }

  #seal(body: RoundBody, live: readonly Deadline[]): string {
    const { flow, binding, fid, round } = this.#input;
    const { codec } = this.#settings;
    const span = childSpan(SPAN.seal);
    try {
      const { token, claims } = codec.mint(
        binding,
        { fid, hash: flow.hash, round, body },
        { ttlSeconds: this.#ttlFor(live) },
      );
      this.#minted = claims.exp;
      return token;
    } catch (error) {
      if (span) failed(span, error);
      throw error;
    } finally {
      span?.end();
    }
  }

  /**
   * The next state could not be minted: most often it would pass the codec's size cap because
   * of an answer or argument the client sent. Nothing a client controls may end in a bare
   * "Internal error", and with a ledger the state this round opened is already redeemed, so an
   * error would also lose the flow instance. Instead the round answers from the PREVIOUS state,
   * minted afresh (new jti, this round's number): the same questions as before, each request
   * that shows the user text saying what was too large and the limit. What the machine did
   * this round is dropped (invoked work runs again with the corrected answers). A first call
   * has no previous state: it ends in an error saying the same, and nothing was used up. So
   * does a round whose previous requests show no text (only roots, or only a deadline): asking
   * them again would loop without anyone learning why.
   */
  #unsaved(error: unknown): InputRequiredOutcome | ErrorOutcome {
    const { flow, fid, restored } = this.#input;
    const { log } = this.#settings;
    log({ type: 'flow_error', flow: flow.name, fid, error });
    const reason = this.#whyUnsaved(error);
    const shown = restored?.pending.some((key) => {
      const kind = flow.inputs[key]!.kind;
      return kind === 'form' || kind === 'url';
    });
    if (restored && shown) {
      const previous = restored.body;
      const inputRequests = this.#requests(restored.pending, previous.s[1], () => reason);
      try {
        const requestState = this.#seal(previous, previous.t ?? []);
        return this.#expiring({ type: 'input_required', ...this.#base, inputRequests, requestState });
      } catch (again) {
        log({ type: 'flow_error', flow: flow.name, fid, error: again });
      }
    }
    return { type: 'error', ...this.#base, message: reason };
  }

  /** A sentence for a state that could not be minted: what to shorten, and the limit. */
  #whyUnsaved(error: unknown): string {
    const { flow, restored } = this.#input;
    if (!(error instanceof StateTooLargeError)) {
      return `The flow "${flow.name}" could not save its state; nothing was saved. The server log has details.`;
    }
    const unit = error.part === 'token' ? 'characters' : 'bytes';
    const over = `the flow's state would be ${count(error.size)} ${unit}, over its limit of ${count(error.limit)}`;
    const largest = this.#largestInput();
    if (!largest) return `The flow "${flow.name}" cannot continue: ${over}. Nothing was saved.`;
    const again = restored ? 'answer again' : 'call the tool again';
    return `${largest.what} is too large (${count(largest.length)} characters): ${over}. Nothing was saved: shorten it and ${again}.`;
  }

  /** The largest answer received this round or argument, by the length of its JSON. */
  #largestInput(): { what: string; length: number } | undefined {
    const { answers, binding } = this.#input;
    let largest: { what: string; length: number } | undefined;
    const consider = (what: string, value: unknown) => {
      const length = jsonLength(value);
      if (!largest || length > largest.length) largest = { what, length };
    };
    for (const key of Object.keys(answers)) consider(`The answer to "${key}"`, answers[key]);
    const args = binding.args;
    if (typeof args === 'object' && args !== null && !Array.isArray(args)) {
      for (const [name, value] of Object.entries(args)) consider(`The argument "${name}"`, value);
    }
    return largest;
  }

  /** A state outlives its earliest pending deadline by the grace (`lifetimes.ts`), within the cap. */
  #ttlFor(live: readonly Deadline[]): number {
    return stateLifetime(this.#settings, live, this.#settings.now());
  }

  #overBudget(actor: AnyActorRef): RoundEnd {
    const { flow, fid, steps } = this.#input;
    const { budgetMs, log } = this.#settings;
    if (steps.durable) {
      // Only durable steps still running: they go on, recorded when they settle; persist them.
      const snap = actor.getSnapshot() as AnyMachineSnapshot;
      const running = snap.status === 'active' ? runningStepsOf(actor.getPersistedSnapshot(), steps) : undefined;
      if (running) {
        const keys = steps.runningKeys();
        const body = { ...this.#body(snap, this.#deadlines?.() ?? [], {}), r: running };
        actor.stop();
        return {
          fired: this.#fired,
          notifications: this.#notifications,
          delivered: this.#delivered,
          eventSent: this.#eventSent,
          received: this.#received,
          type: 'working',
          body,
          steps: keys,
        };
      }
    }
    log({ type: 'flow_error', flow: flow.name, fid, error: new Error(`round exceeded ${budgetMs} ms`) });
    actor.stop();
    const message = `The flow "${flow.name}" did not finish its work within ${budgetMs} ms; nothing was saved, try again.`;
    return this.#done({ type: 'error', ...this.#base, message }, false);
  }

  #failed(error: unknown): RoundEnd {
    const { flow, fid } = this.#input;
    // The ledger was unreachable (a token call, say): not the flow's failure. See `releaseAfterOutage` (`singleUse.ts`).
    if (isLedgerUnavailable(error)) throw error;
    this.#settings.log({ type: 'flow_error', flow: flow.name, fid, error });
    const message =
      error instanceof FlowError ? error.message : `The flow "${flow.name}" failed. The server log has details.`;
    return this.#done({ type: 'error', ...this.#base, message }, true);
  }
}

/** When each minted outcome's requestState expires: read by the audit trail, never sent (not a field). */
const expiries = new WeakMap<InputRequiredOutcome, number>();

/**
 * When the requestState of an `input_required` outcome minted by a round expires (ms); `undefined`
 * if unknown (always, unless the round's settings set `recordExpiry`).
 */
export function mintedExpiry(outcome: InputRequiredOutcome): number | undefined {
  return expiries.get(outcome);
}
