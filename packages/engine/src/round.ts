/**
 * One round of one flow, played on a live actor: start it (fresh or
 * restored), fire the deadlines that came due, validate and deliver the
 * answers, let the machine settle, and conclude `complete`, `input_required`
 * (minting the next state) or `error`. The runner does everything around it
 * (opening and redeeming the state, the audit trail). A class rather than a
 * nest of closures: a runner plays thousands of rounds a second, and one
 * object per round is all this allocates for its own bookkeeping.
 */
import type { AnyActorRef, AnyMachineSnapshot } from 'xstate';
import type { AuditAnswer } from './audit.js';
import type { RequestStateCodec, StateBinding } from './codec/types.js';
import { compactSnapshot } from './compactSnapshot.js';
import { type Deadline, restoreDeadlines, trackDeadlines } from './durableTimers.js';
import { FlowError } from './errors.js';
import type { Flow } from './flow.js';
import type { InputKind, WireInputRequest } from './inputs.js';
import type { RoundOutcome } from './outcome.js';
import { askedKeys, machineOutput, type RoundBody } from './roundBody.js';
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
  readonly inputResponses: Readonly<Record<string, unknown>> | undefined;
  /** The opened state's body and the keys it awaits; absent on a first call. */
  readonly restored: { readonly body: RoundBody; readonly pending: readonly string[] } | undefined;
  /** Answers received this round are appended here (for the audit trail). */
  readonly received: AuditAnswer[];
}

const MAX_FALLBACK_PASSES = 32;

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
    const { restored, inputResponses } = this.#input;
    const { budgetMs, now } = this.#settings;
    // Observe timers and errors (the snapshot keeps the error) before start, then fire due deadlines.
    this.#deadlines = trackDeadlines(actor, now);
    actor.subscribe(IGNORE_ERRORS);
    try {
      actor.start();
      if (restored?.body.t) restoreDeadlines(actor, restored.body.t, now());
      if (!(await settle(actor, budgetMs))) return this.#overBudget(actor);

      let held: Record<string, unknown> = {};
      // A first call may already carry answers to what the flow asks first (clients that
      // answer ahead): they count as answers to the first round. Anything else is ignored.
      if (restored || inputResponses) {
        const pending = restored ? restored.pending : askedKeys(actor.getSnapshot());
        const delivered = this.#deliverAnswers(actor, pending, restored?.body.h ?? {});
        if (delivered.complete) {
          if (!(await settle(actor, budgetMs))) return this.#overBudget(actor);
        } else {
          held = delivered.held;
        }
      }
      return await this.#conclude(actor, held);
    } finally {
      actor.stop();
    }
  }

  get #base() {
    const { flow, fid, round } = this.#input;
    return { flow: flow.name, fid, round };
  }

  /** Validate answers for the asked keys; deliver them all, or hold the valid ones and re-ask the rest. */
  #deliverAnswers(actor: AnyActorRef, pending: readonly string[], heldBefore: Record<string, unknown>) {
    const { flow, inputResponses, received } = this.#input;
    const asked = askedKeys(actor.getSnapshot());
    const raw: Record<string, unknown> = {};
    const answers = new Map<string, unknown>();
    for (const key of asked) {
      const fresh = pending.includes(key) ? inputResponses?.[key] : undefined;
      const candidate = fresh !== undefined ? fresh : heldBefore[key];
      const parsed = candidate === undefined ? undefined : flow.inputs[key]!.parse(candidate);
      if (parsed !== undefined) {
        raw[key] = candidate;
        answers.set(key, parsed);
      }
      if (fresh !== undefined) {
        const action = parsed === undefined ? 'invalid' : String((parsed as { action: string }).action);
        received.push({ key, action, ...(flow.auditValues ? { value: fresh } : {}) });
      }
    }
    if (asked.length === 0 || answers.size < asked.length) return { complete: false, held: raw };
    for (const key of asked) {
      // A previous answer may have moved the machine on; later answers go only where still asked.
      if (key !== asked[0] && !askedKeys(actor.getSnapshot()).includes(key)) continue;
      actor.send({ type: `input.${key}`, ...(answers.get(key) as object) });
    }
    return { complete: true, held: {} };
  }

  async #conclude(actor: AnyActorRef, held: Record<string, unknown>): Promise<RoundOutcome> {
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
      return this.#mint(snap, asked, held, live);
    }
    return this.#failed(new Error('fallback events did not settle the flow'));
  }

  #capable(kind: InputKind): boolean {
    const { capabilities } = this.#input;
    return capabilities === undefined || capabilities[kind] === true;
  }

  #mint(snap: AnyMachineSnapshot, asked: string[], held: Record<string, unknown>, live: Deadline[]): RoundOutcome {
    const { flow, binding, fid, round } = this.#input;
    const pending = asked.filter((key) => !Object.hasOwn(held, key));
    const body: RoundBody = { s: compactSnapshot(snap) };
    if (live.length > 0) body.t = live;
    if (Object.keys(held).length > 0) body.h = held;
    const inputRequests: Record<string, WireInputRequest> = {};
    for (const key of pending) inputRequests[key] = flow.inputs[key]!.build(snap.context);
    const minted = this.#settings.codec.mint(
      binding,
      { fid, hash: flow.hash, round, body },
      { ttlSeconds: this.#ttlFor(live) },
    );
    return { type: 'input_required', ...this.#base, inputRequests, requestState: minted.token };
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
