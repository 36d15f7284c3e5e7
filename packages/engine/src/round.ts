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
import type { AnyActorRef, AnyMachineSnapshot } from 'xstate';
import type { AuditAnswer } from './audit.js';
import type { RequestStateCodec, StateBinding } from './codec/types.js';
import { compactSnapshot } from './compactSnapshot.js';
import { type Deadline, restoreDeadlines, trackDeadlines } from './durableTimers.js';
import { FlowError, StateTooLargeError } from './errors.js';
import type { Flow } from './flow.js';
import { type InputKind, jsonLength, type WireInputRequest } from './inputs.js';
import type { RoundOutcome } from './outcome.js';
import { type Answers, askedKeys, machineOutput, type RoundBody } from './roundBody.js';
import type { ClientInputCapabilities, RunnerLogEvent } from './runner.js';
import { settle } from './settle.js';

/** What every round of one runner shares. */
export interface RoundSettings {
  readonly codec: RequestStateCodec;
  readonly now: () => number;
  /** Time budget for a round's invoked promises, ms. */
  readonly budgetMs: number;
  /** Lifetime of minted states, seconds; extended to cover a pending deadline up to `maxTtlSeconds`. */
  readonly ttlSeconds: number;
  readonly maxTtlSeconds: number;
  readonly log: (event: RunnerLogEvent) => void;
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
}

const MAX_FALLBACK_PASSES = 32;

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
  async play(actor: AnyActorRef): Promise<RoundOutcome> {
    const { flow, restored, answers } = this.#input;
    const { budgetMs, now } = this.#settings;
    // Observe timers and errors (the snapshot keeps the error) before start, then fire due deadlines.
    this.#deadlines = trackDeadlines(actor, now);
    actor.subscribe(IGNORE_ERRORS);
    try {
      actor.start();
      if (restored?.body.t) restoreDeadlines(actor, restored.body.t, now());
      if (!(await settle(actor, budgetMs))) return this.#overBudget(actor);

      let held: Record<string, unknown> = {};
      let notes = new Map<string, string>();
      // A first call may already carry answers to what the flow asks first (clients that
      // answer ahead): they count as answers to the first round, except for inputs marked
      // `onlyWhenAsked`, whose request must be shown first. Anything else is ignored.
      if (restored || Object.keys(answers).length > 0) {
        const pending = restored
          ? restored.pending
          : askedKeys(actor.getSnapshot()).filter((key) => !flow.inputs[key]!.onlyWhenAsked);
        const delivered = this.#deliverAnswers(actor, pending, restored?.body.h ?? {});
        if (delivered.complete) {
          if (!(await settle(actor, budgetMs))) return this.#overBudget(actor);
        } else {
          held = delivered.held;
          notes = delivered.notes;
        }
      }
      return await this.#conclude(actor, held, notes);
    } finally {
      actor.stop();
    }
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
    const asked = askedKeys(actor.getSnapshot());
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
      received.push({ key, action, ...(flow.auditValues ? { value: fresh } : {}) });
    }
    if (asked.length === 0 || Object.keys(held).length < asked.length) return { complete: false, held, notes };
    for (const key of asked) {
      // A previous answer may have moved the machine on; later answers go only where still asked.
      if (key !== asked[0] && !askedKeys(actor.getSnapshot()).includes(key)) continue;
      actor.send({ type: `input.${key}`, ...(held[key] as object) });
    }
    return { complete: true, held: {}, notes };
  }

  async #conclude(
    actor: AnyActorRef,
    held: Record<string, unknown>,
    notes: ReadonlyMap<string, string>,
  ): Promise<RoundOutcome> {
    const { flow, received } = this.#input;
    for (let pass = 0; pass < MAX_FALLBACK_PASSES; pass++) {
      const snap = actor.getSnapshot() as AnyMachineSnapshot;
      if (snap.status === 'error') return this.#failed(snap.error);
      if (snap.status === 'done') {
        return { type: 'complete', ...this.#base, result: flow.toResult(machineOutput(flow.machine, snap)) };
      }
      const asked = askedKeys(snap);
      const unsupported = asked.filter((key) => !this.#capable(flow.inputs[key]!.kind));
      if (unsupported.length > 0) {
        const noFallback = unsupported.find((key) => !flow.inputs[key]!.fallback);
        if (noFallback) {
          const kind = flow.inputs[noFallback]!.kind;
          return {
            type: 'error',
            ...this.#base,
            message: `This tool needs ${kind} input ("${noFallback}"), which the client did not declare in its capabilities.`,
            undeclared: { key: noFallback, kind },
          };
        }
        for (const key of unsupported) {
          received.push({ key, action: 'unsupported' });
          actor.send({ type: `input.${key}`, action: 'unsupported' });
        }
        if (!(await settle(actor, this.#settings.budgetMs))) return this.#overBudget(actor);
        continue;
      }
      const live = this.#deadlines?.() ?? [];
      if (asked.length === 0 && live.length === 0) {
        return this.#failed(
          new Error(`flow is stuck in ${JSON.stringify(snap.value)}: it neither asks for input nor ends`),
        );
      }
      return this.#mint(snap, asked, held, live, notes);
    }
    return this.#failed(new Error('fallback events did not settle the flow'));
  }

  #capable(kind: InputKind): boolean {
    const { capabilities } = this.#input;
    return capabilities === undefined || capabilities[kind] === true;
  }

  #mint(
    snap: AnyMachineSnapshot,
    asked: string[],
    held: Record<string, unknown>,
    live: Deadline[],
    notes: ReadonlyMap<string, string>,
  ): RoundOutcome {
    const pending = asked.filter((key) => !Object.hasOwn(held, key));
    const body: RoundBody = { s: compactSnapshot(snap) };
    if (live.length > 0) body.t = live;
    if (Object.keys(held).length > 0) body.h = held;
    const inputRequests = this.#requests(pending, snap.context, (key) => {
      const problem = notes.get(key);
      return problem ? `Your previous answer was not accepted (${problem}). Please answer again.` : undefined;
    });
    let requestState: string;
    try {
      requestState = this.#seal(body, live);
    } catch (error) {
      return this.#unsaved(error);
    }
    return { type: 'input_required', ...this.#base, inputRequests, requestState };
  }

  #requests(keys: readonly string[], context: unknown, note: (key: string) => string | undefined) {
    const { flow } = this.#input;
    const requests: Record<string, WireInputRequest> = {};
    for (const key of keys) requests[key] = flow.inputs[key]!.build(context, note(key));
    return requests;
  }

  #seal(body: RoundBody, live: Deadline[]): string {
    const { flow, binding, fid, round } = this.#input;
    const { codec } = this.#settings;
    return codec.mint(binding, { fid, hash: flow.hash, round, body }, { ttlSeconds: this.#ttlFor(live) }).token;
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
  #unsaved(error: unknown): RoundOutcome {
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
        return {
          type: 'input_required',
          ...this.#base,
          inputRequests,
          requestState: this.#seal(previous, previous.t ?? []),
        };
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

  /** A state must outlive its earliest deadline (plus a minute) so the client can see what it led to. */
  #ttlFor(live: Deadline[]): number {
    const { ttlSeconds, maxTtlSeconds, now } = this.#settings;
    if (live.length === 0) return ttlSeconds;
    const earliest = Math.min(...live.map((d) => d[1]));
    const cover = Math.ceil((earliest - now()) / 1000) + 60;
    return Math.min(maxTtlSeconds, Math.max(ttlSeconds, cover));
  }

  #overBudget(actor: AnyActorRef): RoundOutcome {
    const { flow, fid } = this.#input;
    const { budgetMs, log } = this.#settings;
    log({ type: 'flow_error', flow: flow.name, fid, error: new Error(`round exceeded ${budgetMs} ms`) });
    actor.stop();
    return {
      type: 'error',
      ...this.#base,
      message: `The flow "${flow.name}" did not finish its work within ${budgetMs} ms; nothing was saved, try again.`,
    };
  }

  #failed(error: unknown): RoundOutcome {
    const { flow, fid } = this.#input;
    this.#settings.log({ type: 'flow_error', flow: flow.name, fid, error });
    const message =
      error instanceof FlowError ? error.message : `The flow "${flow.name}" failed. The server log has details.`;
    return { type: 'error', ...this.#base, message };
  }
}
