/**
 * `step()`: how an author declares a durable step, the XState way. A step is
 * promise actor logic (XState's `fromPromise`) whose outcome is durable: put
 * it in `setup({ actors })` and invoke it with `invoke: { id, src }` like any
 * promise. Served by a runner with a ledger, each invocation's result (or the
 * error after its last attempt) is recorded once under (flow instance,
 * `<step id>#<n>`) before the round answers, and is read back, never run
 * again, by any later round on any instance (a retry, a replayed state, a lost
 * response). The function receives an idempotency key stable across attempts,
 * rounds and instances, to hand to external APIs; retries follow the step's
 * policy (attempts, exponential backoff; a `FlowError` is never retried). The
 * bookkeeping lives in `durableSteps.ts`; this module only declares. A step
 * runs only inside a runner's round, which hands it the executor (found under
 * a process-global symbol, so a flows module with its own copy of the engine
 * finds it too); anywhere else it fails with a `FlowError` instead of running
 * as a plain promise, which would be neither durable nor keyed per instance.
 */
import { fromPromise, type PromiseActorLogic } from 'xstate';
import { FlowDefinitionError, FlowError } from '../errors.js';
import type { FlowServices } from './services.js';

/** What a step's function receives. */
export interface StepContext<TInput> {
  /** The invoke's `input` (keep it JSON: it is persisted while the step runs across rounds). */
  readonly input: TInput;
  /**
   * Stable for this invocation of this step of this flow instance, across attempts, rounds
   * and server instances: pass it to the external API (payment providers take one). A keyed
   * digest (43 base64url characters), not guessable from the request id.
   */
  readonly idempotencyKey: string;
  /** 1 for the first attempt, +1 per retry. */
  readonly attempt: number;
  /** The runner's services (clock, single-use tokens), as `implement` receives them. */
  readonly services: FlowServices;
  /**
   * Without a ledger (`allowReplays`): aborted when the round ends before the step (its outcome
   * would be lost). With a ledger the step outlives rounds and this never aborts.
   */
  readonly signal: AbortSignal;
}

/** A step's retry policy, like a Temporal activity's. */
export interface StepRetry {
  /** Attempts in all, at least 1 (default 1: no retry). */
  readonly attempts: number;
  /** Pause before the second attempt, ms (default 1,000). */
  readonly backoffMs?: number;
  /** Each later pause is the previous one times `factor` (default 2). */
  readonly factor?: number;
  /** No pause is longer than this, ms (default 60,000). */
  readonly maxBackoffMs?: number;
}

/** Options of {@link step}. */
export interface StepOptions {
  /** Retries after an error (a `FlowError` is never retried). Default: one attempt. */
  readonly retry?: StepRetry;
  /**
   * How long an instance's claim on a running step lasts without renewal, ms (default 60,000).
   * The instance running the step renews it every third of this; if it dies, another instance
   * may run the step again (same idempotency key) once the lease has ended.
   */
  readonly leaseMs?: number;
}

/** The function a step runs. Its result must be JSON (it is recorded in the ledger). */
export type StepFunction<TOutput, TInput> = (context: StepContext<TInput>) => Promise<TOutput>;

/** What {@link step} attaches to its actor logic, read by the runner and the test kit. */
export interface StepDeclaration {
  readonly id: string;
  readonly run: StepFunction<unknown, unknown>;
  readonly options: StepOptions;
}

/** Promise actor logic of a durable step (XState `fromPromise` logic, marked with its step id). */
export type StepLogic<TOutput, TInput, TId extends string = string> = PromiseActorLogic<TOutput, TInput> & {
  readonly stepId: TId;
};

/** Where a step's logic keeps its declaration. */
const STEP: unique symbol = Symbol.for('baton.step');

/** What runs a step inside a round (`durableSteps.ts`), found through the round actor's system. */
export type StepExecutor = (
  declaration: StepDeclaration,
  invocation: { readonly input: unknown; readonly signal: AbortSignal; readonly childId: string },
) => Promise<unknown>;

/**
 * Where a round actor's system holds its step executor (set by the runner for the length of a
 * round). A symbol-keyed property of the system rather than a WeakMap entry: one is set every
 * round, and WeakMap entries (ephemerons) cost the garbage collector more than a property.
 * Process-global (`Symbol.for`): the step may come from another copy of the engine (`copies.ts`).
 */
const STEP_EXECUTOR = Symbol.for('baton.stepExecutor');

/** What runs a round's steps (`RoundSteps`), called as a method. */
export interface StepRunner {
  execute: StepExecutor;
}

/** Give the round actor system `system` its step runner. */
export function setStepExecutor(system: object, runner: StepRunner): void {
  (system as { [STEP_EXECUTOR]?: StepRunner })[STEP_EXECUTOR] = runner;
}

const STEP_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Declare a durable step: promise actor logic for `setup({ actors })`. It runs only in a round
 * of a runner (`createRunner`, `baton serve`, the test kit): an actor started any other way (a
 * plain `createActor`) gets a `FlowError` from the invocation, never an unkeyed plain promise.
 *
 * @example
 * ```ts
 * import { defineFlow, defineInputs, step } from '@baton/engine';
 * import { assign, setup } from 'xstate';
 * import { z } from 'zod';
 *
 * const issueRefund = step(
 *   'issueRefund',
 *   async ({ input, idempotencyKey }: { input: { order: string }; idempotencyKey: string }) => {
 *     // e.g. payments.refund({ order: input.order }, { idempotencyKey })
 *     return `RF-${input.order}-${idempotencyKey.slice(0, 6)}`;
 *   },
 *   { retry: { attempts: 3, backoffMs: 500 } },
 * );
 *
 * const machine = setup({
 *   types: { input: {} as { order: string }, context: {} as { order: string; refund?: string } },
 *   actors: { issueRefund },
 * }).createMachine({
 *   context: ({ input }) => ({ order: input.order }),
 *   initial: 'refunding',
 *   states: {
 *     refunding: {
 *       invoke: {
 *         id: 'refund',
 *         src: 'issueRefund',
 *         input: ({ context }) => ({ order: context.order }),
 *         onDone: { target: 'done', actions: assign({ refund: ({ event }) => event.output }) },
 *         onError: 'failed',
 *       },
 *     },
 *     done: { type: 'final', output: ({ context }) => `Refunded: ${context.refund}` },
 *     failed: { type: 'final', output: 'The refund failed.' },
 *   },
 * });
 *
 * export const refund = defineFlow({
 *   name: 'refund',
 *   description: 'Refund an order once',
 *   args: z.object({ order: z.string().max(40) }),
 *   inputs: defineInputs({}),
 *   machine,
 * });
 * ```
 * @throws FlowDefinitionError on a bad id or retry policy.
 */
export function step<TOutput, TInput = unknown, const TId extends string = string>(
  id: TId,
  run: StepFunction<TOutput, TInput>,
  options: StepOptions = {},
): StepLogic<TOutput, TInput, TId> {
  if (!STEP_ID.test(id)) throw new FlowDefinitionError(`step id "${id}" must be 1-64 characters of [A-Za-z0-9_.-]`);
  const retry = options.retry;
  if (retry) {
    const { attempts, backoffMs = 0, factor = 1, maxBackoffMs = 0 } = retry;
    if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > 100) {
      throw new FlowDefinitionError(`step "${id}": retry.attempts must be an integer from 1 to 100`);
    }
    if (![backoffMs, factor, maxBackoffMs].every((n) => Number.isFinite(n) && n >= 0)) {
      throw new FlowDefinitionError(`step "${id}": retry backoffMs, factor and maxBackoffMs must be non-negative`);
    }
  }
  if (options.leaseMs !== undefined && !(Number.isFinite(options.leaseMs) && options.leaseMs >= 100)) {
    throw new FlowDefinitionError(`step "${id}": leaseMs must be at least 100`);
  }
  const declaration: StepDeclaration = { id, run: run as StepFunction<unknown, unknown>, options };
  const logic = fromPromise<TOutput, TInput>(async ({ input, system, signal, self }) => {
    const runner = (system as { [STEP_EXECUTOR]?: StepRunner })[STEP_EXECUTOR];
    if (!runner) throw outsideRunner(id);
    return (await runner.execute(declaration, { input, signal, childId: self.id })) as TOutput;
  });
  Object.defineProperty(logic, STEP, { value: declaration });
  return Object.assign(logic, { stepId: id });
}

/** Why a step invoked by an actor no runner plays does not run. */
function outsideRunner(id: string): FlowError {
  return new FlowError(
    `step "${id}" ran outside a Baton round, where it would be neither durable nor keyed per flow instance: serve the flow (baton serve, createRunner), or test it with createFlowTester from @baton/engine/testing`,
  );
}

/** The step declared by `logic`, when it is a step. */
export function stepOf(logic: unknown): StepDeclaration | undefined {
  return typeof logic === 'object' && logic !== null ? (logic as { [STEP]?: StepDeclaration })[STEP] : undefined;
}

/** The pause before attempt `attempt + 1` (ms). */
export function backoffBefore(retry: StepRetry | undefined, attempt: number): number {
  const base = retry?.backoffMs ?? 1000;
  const factor = retry?.factor ?? 2;
  return Math.min(retry?.maxBackoffMs ?? 60_000, base * factor ** (attempt - 1));
}
