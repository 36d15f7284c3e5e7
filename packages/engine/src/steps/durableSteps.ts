/**
 * The engine's bookkeeping of durable steps (declared with `step()` in
 * `steps.ts`) for one round. Each invocation is named `<step id>#<n>`, `n`
 * counting the invocations of that step the instance has already settled
 * (kept in the round body as `k`), plus those in flight, so a state that
 * invokes a step again gets a new record while a restored invocation finds
 * its own. With a ledger an invocation is claimed under a lease: the claimer
 * runs it (attempts and backoff, a `FlowError` never retried), renewing the
 * lease while it runs, seals and records its result or final error once, and
 * delivers what was recorded; a recorded step is delivered without running;
 * a step another instance holds is awaited by polling the ledger until it is
 * recorded or its lease ends (then it is claimed and run again, with the same
 * idempotency key: at-least-once for the external call, exactly-once for the
 * flow). The run is detached from the round: when the round's budget ends
 * first, the step keeps running on this runner and records when it settles,
 * and the round persists the invocation (`r` in the body: child id, source,
 * input) so that any later round restores it and picks up the record. Without
 * a ledger (`allowReplays`) steps run inside the round, keyed per instance all the same.
 * When the ledger is unreachable (`LedgerUnavailableError` from a claim, a
 * record, or the step's own token call) the step is not settled: the error is
 * kept as the round's `unavailable` fault (the runner abandons the round, see
 * `releaseAfterOutage` in `round/singleUse.ts`), no further step starts in that round, and an outcome
 * that ran but could not be recorded is recorded in the background while the
 * database comes back, so a retry on this runner picks it up instead of
 * running the step again.
 */

import type { FlowServices } from '../authoring/services.js';
import { backoffBefore, type StepDeclaration, type StepExecutor } from '../authoring/steps.js';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { FullLedger, StepRecord } from '../contract/ledger.js';
import { FlowError, isLedgerUnavailable } from '../errors.js';
import { ATTR, childSpan, failed, SPAN } from '../telemetry/tracing.js';

/** What a step's execution came to, as sealed in the ledger: a result, or an error message (`f`: a FlowError). */
export type StepOutcome =
  | { readonly ok: true; readonly v?: unknown }
  | { readonly ok: false; readonly m: string; readonly f: boolean };

/** A running invocation persisted in a round body: `[source key in the machine, input]`, by child id. */
export type RunningSteps = Record<string, [src: string, input: unknown]>;

/** What every round of one runner shares about steps. */
export interface StepSettings {
  readonly ledger: FullLedger | undefined;
  readonly codec: RequestStateCodec;
  readonly now: () => number;
  readonly log: (event: RunnerLogEvent) => void;
  readonly services: FlowServices;
  /** This runner's lease owner id (random per runner). */
  readonly owner: string;
  /** How often a step held by another instance is read, ms. */
  readonly pollMs: number;
  /** Executions this runner has running, by `fid\0key`: a later round of this runner awaits them. */
  readonly executing: Map<string, Promise<StepOutcome | undefined>>;
}

/** Step rows are kept this long after their last claim (as long as a parked request). */
const STEP_RETENTION_MS = 30 * 24 * 3600 * 1000;
const DEFAULT_LEASE_MS = 60_000;
/** How long an outcome whose record failed with the ledger unreachable is retried in the background, ms. */
const RECORD_RETRY_MS = 5 * 60_000;

const sleep = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, Math.max(0, ms)).unref?.();
  });

/** A step's idempotency key: a keyed digest of the flow instance and invocation. */
export function idempotencyKeyOf(codec: RequestStateCodec, fid: string, key: string): string {
  return codec.digest(['step', fid, key], 'step-idempotency');
}

/** The steps of one round; see the module comment. */
export class RoundSteps {
  readonly #settings: StepSettings;
  readonly #fid: string;
  readonly #flow: string;
  /** Settled invocations per step id (the body's `k`), updated as steps settle in this round. */
  readonly counts: Record<string, number>;
  readonly #inFlight = new Map<string, number>();
  /** Child actor id to the step key it runs, while it runs. */
  readonly #running = new Map<string, string>();
  #unavailable: Error | undefined;

  constructor(settings: StepSettings, fid: string, flow: string, counts: Readonly<Record<string, number>> | undefined) {
    this.#settings = settings;
    this.#fid = fid;
    this.#flow = flow;
    this.counts = { ...counts };
  }

  /** Whether steps are durable in this round (the runner has a ledger). */
  get durable(): boolean {
    return this.#settings.ledger !== undefined;
  }

  /** Whether the child actor `id` is a durable step still running. */
  isRunning(childId: string): boolean {
    return this.#running.has(childId);
  }

  /**
   * The ledger outage a step of this round met, if any: the round must be abandoned (answered
   * as retryable, never recorded), whatever the machine made of the step's error.
   */
  get unavailable(): Error | undefined {
    return this.#unavailable;
  }

  /** The step keys still running. */
  runningKeys(): string[] {
    return [...this.#running.values()];
  }

  /** Run (or read back) one invocation of a step; a method, not a closure per round (`StepRunner`). */
  async execute(
    declaration: StepDeclaration,
    { input, signal, childId }: Parameters<StepExecutor>[1],
  ): Promise<unknown> {
    const { id } = declaration;
    // The round is being abandoned: start nothing more (its retry runs it).
    if (this.#unavailable) throw this.#unavailable;
    const n = (this.counts[id] ?? 0) + (this.#inFlight.get(id) ?? 0);
    const key = `${id}#${n}`;
    this.#inFlight.set(id, (this.#inFlight.get(id) ?? 0) + 1);
    this.#running.set(childId, key);
    try {
      const outcome = this.#settings.ledger
        ? await this.#durable(declaration, key, input)
        : await this.#attempts(declaration, key, input, signal);
      if (!signal.aborted) this.counts[id] = (this.counts[id] ?? 0) + 1;
      if (outcome.ok) return outcome.v;
      throw outcome.f ? new FlowError(outcome.m) : new Error(outcome.m);
    } catch (error) {
      if (isLedgerUnavailable(error)) this.#unavailable ??= error;
      throw error;
    } finally {
      this.#inFlight.set(id, (this.#inFlight.get(id) ?? 1) - 1);
      this.#running.delete(childId);
    }
  }

  /** Claim (or, as its owner, renew the lease on) the invocation `key` for `leaseMs` from now. */
  #claim(key: string, leaseMs: number) {
    const { now, owner } = this.#settings;
    const at = now();
    return this.#settings.ledger!.steps.claimStep({
      id: this.#fid,
      key,
      owner,
      leaseUntil: at + leaseMs,
      now: at,
      expiresAt: at + STEP_RETENTION_MS,
    });
  }

  /** Claim, run or await the invocation `key` until an outcome is recorded. */
  async #durable(declaration: StepDeclaration, key: string, input: unknown): Promise<StepOutcome> {
    const ledger = this.#settings.ledger!;
    const { now, pollMs, executing } = this.#settings;
    const leaseMs = declaration.options.leaseMs ?? DEFAULT_LEASE_MS;
    const here = `${this.#fid}\u0000${key}`;
    for (;;) {
      const claim = await this.#claim(key, leaseMs);
      if (claim.status === 'recorded') {
        const opened = this.#open(claim.record);
        if (opened) return opened;
        throw new Error(`the recorded outcome of step ${key} does not open`);
      }
      const running = executing.get(here);
      if (running) {
        // Already running on this runner (started by an earlier round): await it.
        const outcome = await running;
        if (outcome) return outcome;
        await sleep(pollMs);
        continue;
      }
      if (claim.status === 'claimed') {
        const execution: Promise<StepOutcome | undefined> = this.#execute(declaration, key, input, leaseMs).finally(
          () => {
            // An outcome still being recorded in the background replaced this execution: keep it.
            if (executing.get(here) === execution) executing.delete(here);
          },
        );
        executing.set(here, execution);
        const outcome = await execution;
        if (outcome) return outcome;
        await sleep(pollMs); // recording failed (logged): claim again, read or take over later
        continue;
      }
      // Held by another instance: read until recorded, or until its lease ends (then claim again).
      const wait = Math.min(pollMs, claim.leaseUntil - now() + 1);
      await sleep(wait);
      const row = await ledger.steps.getStep(this.#fid, key);
      if (row && row.status !== 'running') {
        const opened = this.#open(row);
        if (opened) return opened;
      }
    }
  }

  /** Run the attempts, renew the lease meanwhile, record the outcome; what was recorded (first wins). */
  async #execute(
    declaration: StepDeclaration,
    key: string,
    input: unknown,
    leaseMs: number,
  ): Promise<StepOutcome | undefined> {
    const ledger = this.#settings.ledger!;
    const { now, log } = this.#settings;
    const renew = setInterval(
      () => {
        this.#claim(key, leaseMs).catch((error: unknown) =>
          log({ type: 'flow_error', flow: this.#flow, fid: this.#fid, error }),
        );
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    renew.unref?.();
    let outcome: StepOutcome;
    try {
      // Detached from the round: the step keeps running when the round ends first.
      outcome = await this.#attempts(declaration, key, input, new AbortController().signal);
    } finally {
      clearInterval(renew);
    }
    const status = outcome.ok ? 'succeeded' : 'failed';
    const sealed = this.#seal(key, outcome);
    const record = async () => {
      const recorded = await ledger.steps.recordStep({ id: this.#fid, key, status, outcome: sealed, now: now() });
      if (recorded.status === 'already_recorded') return this.#open(recorded.record);
      if (recorded.status === 'unknown') throw new Error(`step ${key} vanished from the ledger before it was recorded`);
      return outcome;
    };
    try {
      return await record();
    } catch (error) {
      log({ type: 'flow_error', flow: this.#flow, fid: this.#fid, error });
      if (!isLedgerUnavailable(error)) return undefined;
      // The step ran: keep recording its outcome while the ledger comes back, where a later round
      // of this runner finds it (`executing`), and abandon this round meanwhile.
      const here = `${this.#fid}\u0000${key}`;
      const later: Promise<StepOutcome | undefined> = this.#recordLater(record, leaseMs).finally(() => {
        if (this.#settings.executing.get(here) === later) this.#settings.executing.delete(here);
      });
      this.#settings.executing.set(here, later);
      throw error;
    }
  }

  /** Retry `record` (pausing 100 ms doubling to 1 s) while the ledger is unreachable; `undefined` when it gives up. */
  async #recordLater(
    record: () => Promise<StepOutcome | undefined>,
    leaseMs: number,
  ): Promise<StepOutcome | undefined> {
    const deadline = performance.now() + Math.max(RECORD_RETRY_MS, leaseMs);
    for (let pause = 100; performance.now() + pause < deadline; pause = Math.min(1000, pause * 2)) {
      await sleep(pause);
      try {
        return await record();
      } catch (error) {
        if (!isLedgerUnavailable(error)) {
          this.#settings.log({ type: 'flow_error', flow: this.#flow, fid: this.#fid, error });
          return undefined;
        }
      }
    }
    return undefined;
  }

  /** The attempts of one execution: retries with backoff; a `FlowError` or the last attempt's error ends them. */
  async #attempts(
    declaration: StepDeclaration,
    key: string,
    input: unknown,
    signal: AbortSignal,
  ): Promise<StepOutcome> {
    const { codec, services, log } = this.#settings;
    const idempotencyKey = idempotencyKeyOf(codec, this.#fid, key);
    const attempts = declaration.options.retry?.attempts ?? 1;
    for (let attempt = 1; ; attempt++) {
      const span = childSpan(SPAN.step, { [ATTR.stepKey]: key, [ATTR.stepAttempt]: attempt });
      try {
        const value = await declaration.run({ input, idempotencyKey, attempt, services, signal });
        span?.end();
        return value === undefined ? { ok: true } : { ok: true, v: JSON.parse(JSON.stringify(value)) };
      } catch (error) {
        if (span) {
          failed(span, error);
          span.end();
        }
        log({ type: 'flow_error', flow: this.#flow, fid: this.#fid, error });
        // The step's own ledger call (a single-use token, say) could not be made: not its outcome.
        if (isLedgerUnavailable(error)) throw error;
        const final = error instanceof FlowError || attempt >= attempts;
        if (final) {
          return {
            ok: false,
            m: error instanceof Error ? error.message : String(error),
            f: error instanceof FlowError,
          };
        }
        await sleep(backoffBefore(declaration.options.retry, attempt));
      }
    }
  }

  #seal(key: string, outcome: StepOutcome): string {
    return this.#settings.codec.sealBlob(JSON.stringify(outcome), 'step', canonicalJson(['step', this.#fid, key]));
  }

  /** A recorded outcome, opened; `undefined` (logged) when it does not open for this instance and key. */
  #open(record: StepRecord): StepOutcome | undefined {
    try {
      const plain = this.#settings.codec.openBlob(
        record.outcome ?? '',
        'step',
        canonicalJson(['step', this.#fid, record.key]),
      );
      return JSON.parse(plain) as StepOutcome;
    } catch {
      this.#settings.log({
        type: 'flow_error',
        flow: this.#flow,
        fid: this.#fid,
        error: new Error(
          `the recorded outcome of step ${record.key} does not open: the ledger was altered, or its key left the ring`,
        ),
      });
      return undefined;
    }
  }
}

/**
 * The durable steps still running in a snapshot, to persist (`r`): every active child must be
 * one (`undefined` when another child is still running: then the round is simply over budget).
 */
export function runningStepsOf(persisted: unknown, steps: RoundSteps): RunningSteps | undefined {
  const children = (
    persisted as { children?: Record<string, { src?: unknown; snapshot?: { status?: string; input?: unknown } }> }
  ).children;
  const running: RunningSteps = {};
  for (const [id, child] of Object.entries(children ?? {})) {
    if (child?.snapshot?.status !== 'active') continue;
    if (!steps.isRunning(id) || typeof child.src !== 'string') return undefined;
    running[id] = [child.src, child.snapshot.input ?? null];
  }
  return Object.keys(running).length > 0 ? running : undefined;
}

/** A restorable snapshot with the persisted running steps as children (XState starts them again on start). */
export function withRunningSteps<T>(snapshot: T, running: RunningSteps | undefined): T {
  if (!running) return snapshot;
  const children = Object.fromEntries(
    Object.entries(running).map(([id, [src, input]]) => [
      id,
      { src, snapshot: { status: 'active', output: undefined, error: undefined, input } },
    ]),
  );
  return { ...snapshot, children } as T;
}

/** Whether an (authenticated) payload is shaped like {@link RunningSteps}. */
export function isRunningSteps(value: unknown): value is RunningSteps {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string')
  );
}
