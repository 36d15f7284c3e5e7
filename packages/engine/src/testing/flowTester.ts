/**
 * The flow test kit: drive a flow through rounds without any transport, the
 * way an MCP client would, with a clock you move. Each `answer()` is a real
 * round through the real runner and codec (states are minted, sealed and
 * opened), so a test of a flow is a test of what clients will see. The
 * clock moves any distance (a deadline days away is reached by advancing
 * days: states outlive their deadlines), and the runner's `ttlSeconds` and
 * `maxTtlSeconds` pass through, so a flow's waits are tested against the
 * cap it will be served with. Durable steps can be stubbed and are counted;
 * without a ledger they run in the round (as `allowReplays` serves them).
 * Everything is typed by the flow: `start()` takes the args schema's input,
 * `answer()` each input's wire answer (a form's content by its zod schema),
 * step stubs their step's input and output; `answerRaw()` sends anything, to
 * test what a flow does with an answer it refuses. Decisions are made by
 * someone else through the runner's decision tools: `decide()` takes the
 * decision's content typed by its schema and the decider (principal, roles),
 * and four eyes hold (the tester's principal is the requester).
 */
import type { AnyStateMachine, StateMachine, StateValue } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import type { InputCatalog } from '../authoring/inputs/catalog.js';
import type { DecisionSpec } from '../authoring/inputs/decision.js';
import { isDecision } from '../authoring/inputs/decision.js';
import type {
  FormAnswer,
  InputSpec,
  Root,
  RootsAnswer,
  SamplingAnswer,
  SamplingResult,
  UrlAnswer,
} from '../authoring/inputs/spec.js';
import { type StepFunction, type StepLogic, step, stepOf } from '../authoring/steps.js';
import { generateKey } from '../codec/keyRing.js';
import { createRequestStateCodec } from '../codec/requestStateCodec.js';
import type { CallContext, ClientInputCapabilities, FlowMethod } from '../contract/call.js';
import type { Ledger } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import type { WireInputRequest } from '../contract/wire.js';
import { InvalidRequestStateError } from '../errors.js';
import { createRunner } from '../runner/createRunner.js';
import { initialStateValue } from './coverage.js';

/**
 * What a client sends for an input (the wire answer in `inputResponses`): a form's
 * `{ action, content }` with the content typed by its schema, a URL's `{ action }`, a sampling
 * result, a roots listing. Decisions are never answered by the caller (`never`).
 */
export type WireAnswerOf<S> = 0 extends 1 & S
  ? unknown
  : S extends DecisionSpec<any, any>
    ? never
    : S extends InputSpec<infer A, any>
      ? 0 extends 1 & A
        ? unknown
        : [A] extends [SamplingAnswer]
          ? SamplingResult
          : [A] extends [RootsAnswer]
            ? { roots: Root[] }
            : [A] extends [FormAnswer<infer C>]
              ? FormAnswer<C>
              : [A] extends [UrlAnswer]
                ? UrlAnswer
                : A
      : never;

/** The keys of a catalog the caller answers (its decisions left out). */
export type CallerKeys<TInputs extends InputCatalog> = {
  [K in keyof TInputs & string]: TInputs[K] extends DecisionSpec<any, any> ? never : K;
}[keyof TInputs & string];

/** The keys of a catalog's decisions (made by someone else, through the decision tools). */
export type DecisionKeys<TInputs extends InputCatalog> = {
  [K in keyof TInputs & string]: TInputs[K] extends DecisionSpec<any, any> ? K : never;
}[keyof TInputs & string];

/** What a decider answers for a decision: its form's content, typed by the decision's schema. */
export type DecisionContentOf<S> = 0 extends 1 & S
  ? unknown
  : S extends DecisionSpec<infer C, any>
    ? 0 extends 1 & C
      ? unknown
      : C
    : never;

/**
 * Who decides, in {@link FlowRun.decide}: a principal (default `"test-decider"`) and its roles
 * (default: the decision's role, when it names one). The requester (the tester's `principal`)
 * is refused, whatever its roles: four eyes.
 */
export interface Decider {
  readonly principal?: string;
  readonly roles?: readonly string[];
}

/** What {@link FlowRun.answer} takes: any of the caller's keys, each with its typed wire answer. */
export type TestAnswers<TInputs extends InputCatalog> = [CallerKeys<TInputs>] extends [never]
  ? Readonly<Record<string, never>> // nothing to answer (only decisions): `{}`, to retry
  : { [K in CallerKeys<TInputs>]?: WireAnswerOf<TInputs[K]> };

/** The actors a machine's `setup({ actors })` provides. */
type ProvidedActors<TMachine> =
  TMachine extends StateMachine<any, any, any, infer A, any, any, any, any, any, any, any, any, any, any, any>
    ? A
    : never;

/**
 * Stubs for a machine's durable steps: by step id, a function typed by the step's input and
 * output (`step<Out, In>(id, ...)`); any id and any function when the machine's types are unknown.
 */
export type StepStubs<TMachine extends AnyStateMachine> = [ProvidedActors<TMachine>] extends [never]
  ? Readonly<Record<string, StepFunction<any, any>>>
  : {
      readonly [P in ProvidedActors<TMachine> as P extends { logic: StepLogic<any, any, infer Id> }
        ? Id
        : never]?: P extends { logic: StepLogic<infer O, infer I, any> } ? StepFunction<O, I> : never;
    };

/** Options of {@link createFlowTester}. */
export interface FlowTesterOptions<TMachine extends AnyStateMachine = AnyStateMachine> {
  /** Principal bound into states (default `"test-user"`): the requester. */
  principal?: string;
  /** The requester's roles (a requester never decides its own request, whatever they are). */
  roles?: readonly string[];
  /** Method (default `tools/call`). */
  method?: FlowMethod;
  /** Input kinds the pretend client declares (default: all). */
  capabilities?: ClientInputCapabilities;
  /**
   * A ledger, for flows that mint single-use tokens or to test single use. Its `schedule` facet, when
   * it has one, fires timers on `clock.advance`; its `outbox`, the runs' notifications.
   */
  ledger?: Ledger;
  /** Start time, ms since epoch (default: now). */
  startAt?: number;
  /** Round budget, ms (default 5,000). */
  roundBudgetMs?: number;
  /** Lifetime of minted states, seconds (the runner's `ttlSeconds`, default 1,800). */
  ttlSeconds?: number;
  /**
   * Longest lifetime of any state, seconds (the runner's `maxTtlSeconds`, default 30 days): a flow
   * whose deadline plus the 5-minute grace exceeds it makes `createFlowTester` throw `FlowDefinitionError`.
   */
  maxTtlSeconds?: number;
  /**
   * Stubs for durable steps, by step id: each replaces the step's function (same id, retry policy
   * and lease), e.g. `{ issueRefund: async ({ idempotencyKey }) => 'RF-1' }`. Without a ledger,
   * steps run inside the round. Every step is counted, stubbed or not: see {@link FlowTester.stepCalls}.
   */
  steps?: StepStubs<TMachine>;
}

/** A moveable clock. */
export interface TestClock {
  now(): number;
  /**
   * Move time forward by `ms` (any distance: days, for a flow whose deadline is days away). With a
   * ledger, the due timers of waiting (parked) runs then fire as the scheduler of `baton serve`
   * would, with no round from the caller: await it before looking.
   */
  advance(ms: number): Promise<void>;
}

/** A notification the runs sent (an outbox message's body): `{ type, timestamp, data }`. */
export interface TestNotification {
  readonly type: string;
  readonly timestamp: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** One run of a flow under test. */
export interface FlowRun<TInputs extends InputCatalog = InputCatalog> {
  /** The latest outcome. */
  readonly outcome: RoundOutcome;
  /** Every outcome, in order. */
  readonly outcomes: readonly RoundOutcome[];
  /** `complete`, `input_required` or `error`. */
  readonly status: RoundOutcome['type'];
  /** Keys asked by the latest round (empty unless `input_required`). */
  readonly asked: string[];
  /** The wire request for `key` in the latest round. */
  request(key: CallerKeys<TInputs>): WireInputRequest;
  /** Text of a complete result, or the error message. */
  readonly text: string;
  /**
   * Answer the latest round (missing keys are simply not sent), each answer typed by its input.
   * Returns the new outcome. Rejects with "this state expired; call `run.resume()` to read the
   * flow's outcome" (`reason: 'expired'`) once the clock has moved past the latest state's lifetime (`ttlSeconds`, or the
   * flow's deadline): {@link resume} then reads what the flow did meanwhile (needs a ledger).
   */
  answer(responses: TestAnswers<TInputs>): Promise<RoundOutcome>;
  /** Answer the latest round with anything (to test refused answers); like {@link answer} otherwise. */
  answerRaw(responses: Record<string, unknown>): Promise<RoundOutcome>;
  /**
   * Make the decision `key` as someone else, through the runner's decision tools (what
   * `baton_decide` does: ask for the form, then answer it with `content`). Returns the decider's
   * outcome: `complete` ("Recorded …"), `input_required` (the content was refused: asked again
   * saying why), or `error` (not allowed: the requester itself, the wrong role; decided, expired).
   * The run's own outcome does not change: the requester sees the decision on its next round
   * ({@link answer} with `{}` while it is asked to retry, or {@link resume}). Needs a ledger.
   *
   * @example `await run.decide('manager_approval', { approve: true }, { principal: 'bob', roles: ['manager'] })`
   */
  decide<K extends DecisionKeys<TInputs>>(
    key: K,
    content: DecisionContentOf<TInputs[K]>,
    as?: Decider,
  ): Promise<RoundOutcome>;
  /** {@link decide} with any content and any key (to test refused decisions). */
  decideRaw(key: string, content: unknown, as?: Decider): Promise<RoundOutcome>;
  /**
   * The requester continues its parked run (the runner's `resume`, what `baton_resume` does): for
   * a run whose latest outcome is the complete "waiting for a decision" result, or whose latest state
   * expired while the clock moved (its timers fired meanwhile). Returns the new outcome. Needs a ledger.
   */
  resume(): Promise<RoundOutcome>;
}

/** A flow test harness. */
export interface FlowTester<TInputs extends InputCatalog = InputCatalog, TArgs = unknown> {
  readonly clock: TestClock;
  /** Start a run with arguments (typed by the flow's args schema). */
  start(args: TArgs): Promise<FlowRun<TInputs>>;
  /** Start a run with any arguments (to test refused ones). */
  startRaw(args: unknown): Promise<FlowRun<TInputs>>;
  /** Every state value the machine passed through, across runs (for coverage). */
  readonly visited: readonly StateValue[];
  /** How many times the durable step `id` ran (each attempt counts), across runs. */
  stepCalls(id: string): number;
  /**
   * Every notification sent so far, in order (`decision.requested`, `decision.made`,
   * `request.ended`, `flow.notification` from `notify()`). Needs a ledger; `[]` without one.
   */
  notifications(): Promise<readonly TestNotification[]>;
}

/** Answering a state the clock has moved past: says what to do, and keeps the codec's `reason`. */
class StateExpiredError extends Error {
  override readonly name = 'StateExpiredError';
  readonly reason = 'expired';
}

/** An accepted elicitation answer: with a form's content, or without (a URL). */
export function accept(): { action: 'accept' };
export function accept<T extends Record<string, unknown>>(content: T): { action: 'accept'; content: T };
export function accept(content?: Record<string, unknown>) {
  return content === undefined ? { action: 'accept' as const } : { action: 'accept' as const, content };
}
/** A declined elicitation answer. */
export const decline = () => ({ action: 'decline' as const });
/** A cancelled elicitation answer. */
export const cancel = () => ({ action: 'cancel' as const });

function resultText(outcome: RoundOutcome): string {
  if (outcome.type === 'error') return outcome.message;
  if (outcome.type !== 'complete') return '';
  return outcome.result.content.map((block) => (block.type === 'text' ? String(block.text) : '')).join('\n');
}

/**
 * Create a tester for one flow.
 *
 * @example
 * ```ts
 * import { accept, createFlowTester } from '@baton/engine/testing';
 * import { expect } from 'vitest';
 * import { deployProduction } from './flows.js';
 *
 * const tester = createFlowTester(deployProduction);
 * const run = await tester.start({ version: '1.2.3' });
 * expect(run.asked).toEqual(['confirm_deploy', 'change_ticket']);
 * await tester.clock.advance(16 * 60_000);
 * await run.answer({ confirm_deploy: accept({ confirm: true }) });
 * expect(run.text).toContain('expired');
 * ```
 */
export function createFlowTester<TMachine extends AnyStateMachine, TInputs extends InputCatalog, TArgs>(
  flow: Flow<TMachine, TInputs, TArgs>,
  options: FlowTesterOptions<TMachine> = {},
): FlowTester<TInputs, TArgs> {
  let time = options.startAt ?? Date.now();
  // The facets the given ledger declares, read once: timers fire, and notifications are read
  // back, through the facets it has.
  const schedule = options.ledger?.schedule !== undefined;
  const outbox = options.ledger?.outbox;
  const clock: TestClock = {
    now: () => time,
    advance: async (ms) => {
      time += ms;
      if (!schedule) return;
      // As the scheduler does: fire what is due until nothing is.
      let report = await runner.fireDueTimers({ limit: 1000 });
      while (report.claimed >= 1000) report = await runner.fireDueTimers({ limit: 1000 });
    },
  };
  const sent: TestNotification[] = [];
  const notifications = async (): Promise<readonly TestNotification[]> => {
    if (!outbox) return sent;
    // Each message is handed out once: leased for good.
    const claimed = await outbox.claimOutbox({
      now: Number.MAX_SAFE_INTEGER - 1,
      leaseUntil: Number.MAX_SAFE_INTEGER,
      limit: 10_000,
    });
    for (const message of claimed) sent.push(JSON.parse(message.body) as TestNotification);
    return sent;
  };
  const visited: StateValue[] = [];
  const calls = new Map<string, number>();
  const stubs: Readonly<Record<string, StepFunction<any, any> | undefined>> = options.steps ?? {};
  const unknown = Object.keys(stubs).filter((id) => !flow.steps.includes(id));
  if (unknown.length > 0) {
    throw new Error(`createFlowTester: "${flow.name}" has no step ${unknown.map((id) => `"${id}"`).join(', ')}`);
  }
  /** The flow with every step counted and the stubbed ones replaced (same id, options and hash). */
  const tested: Flow = {
    ...flow,
    machineWith(services) {
      const machine = flow.machineWith(services);
      const actors: Record<string, unknown> = {};
      for (const [name, logic] of Object.entries(machine.implementations.actors ?? {})) {
        const declared = stepOf(logic);
        if (!declared) continue;
        const run = stubs[declared.id] ?? declared.run;
        actors[name] = step(
          declared.id,
          (context) => {
            calls.set(declared.id, (calls.get(declared.id) ?? 0) + 1);
            return run(context);
          },
          declared.options,
        );
      }
      return Object.keys(actors).length > 0 ? machine.provide({ actors } as never) : machine;
    },
  };
  const runner = createRunner({
    flows: [tested],
    allowReplays: !options.ledger,
    codec: createRequestStateCodec({
      keys: [generateKey()],
      now: clock.now,
      ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
    }),
    now: clock.now,
    roundBudgetMs: options.roundBudgetMs ?? 5000,
    ...(options.ttlSeconds !== undefined ? { ttlSeconds: options.ttlSeconds } : {}),
    ...(options.maxTtlSeconds !== undefined ? { maxTtlSeconds: options.maxTtlSeconds } : {}),
    // What the runs announce is read back from the ledger's outbox, when it has one.
    ...(options.ledger
      ? {
          ledger: options.ledger,
          outbox: outbox !== undefined,
          ...(schedule ? { ledgerFacets: ['schedule' as const] } : {}),
        }
      : {}),
    // A round awaiting decisions answers "retry later" at once (no real-time hold in a test).
    holdMs: 0,
    pollMs: 1,
    inspect: (event) => {
      // Every state of the root actor: each microstep's (so a transient `always` state counts)
      // and each snapshot's (the initial state, which no microstep reports).
      if (
        (event.type === '@xstate.microstep' || event.type === '@xstate.snapshot') &&
        event.actorRef.sessionId === event.rootId
      ) {
        visited.push((event.snapshot as unknown as { value: StateValue }).value);
      }
    },
  });
  const context: CallContext = {
    principal: options.principal ?? 'test-user',
    method: options.method ?? 'tools/call',
    target: flow.name,
    ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    ...(options.roles ? { roles: options.roles } : {}),
  };

  async function start(args: unknown): Promise<FlowRun<TInputs>> {
    // The initial configuration, transient states included: no inspection event shows it.
    const before = visited.length;
    const outcomes: RoundOutcome[] = [await runner.run({ flow: flow.name, args, context })];
    // Only a run whose machine started (its arguments accepted) entered it.
    if (visited.length > before) visited.splice(before, 0, initialStateValue(flow));
    const latest = () => outcomes[outcomes.length - 1]!;
    return {
      get outcome() {
        return latest();
      },
      outcomes,
      get status() {
        return latest().type;
      },
      get asked() {
        const o = latest();
        return o.type === 'input_required' ? Object.keys(o.inputRequests) : [];
      },
      request(key: string) {
        const o = latest();
        const request = o.type === 'input_required' ? o.inputRequests[key] : undefined;
        if (!request) throw new Error(`the latest round did not ask "${key}"`);
        return request;
      },
      get text() {
        return resultText(latest());
      },
      answer: (responses) => answer(responses as Record<string, unknown>),
      answerRaw: (responses) => answer(responses),
      decide: (key, content, as) => decide(key, content, as),
      decideRaw: decide,
      async resume() {
        const next = await runner.resume({ id: outcomes[0]!.fid, context });
        outcomes.push(next);
        return next;
      },
    };
    async function decide(key: string, content: unknown, as: Decider = {}): Promise<RoundOutcome> {
      const spec = flow.inputs[key];
      const decider = {
        principal: as.principal ?? 'test-decider',
        roles: as.roles ?? (isDecision(spec) && spec.role !== undefined ? [spec.role] : []),
      };
      const id = outcomes[0]!.fid;
      const asked = await runner.decide({ id, key, context: decider });
      if (asked.type !== 'input_required') return asked;
      return runner.decide({
        id,
        key,
        context: decider,
        requestState: asked.requestState,
        inputResponses: { decision: { action: 'accept', content } },
      });
    }
    async function answer(responses: Record<string, unknown>): Promise<RoundOutcome> {
      const o = latest();
      if (o.type !== 'input_required') throw new Error(`the run is ${o.type}; nothing to answer`);
      const next = await runner
        .run({ flow: flow.name, args, context, requestState: o.requestState, inputResponses: responses })
        .catch((error: unknown) => {
          if (!(error instanceof InvalidRequestStateError && error.reason === 'expired')) throw error;
          // The clock moved past the state's lifetime: what a client would be refused with -32602.
          throw new StateExpiredError(
            options.ledger
              ? "this state expired; call `run.resume()` to read the flow's outcome"
              : 'this state expired; without a ledger the run cannot be resumed: give createFlowTester a ' +
                  "ledger (`{ ledger: createMemoryLedger() }`) and call `run.resume()` to read the flow's outcome",
            { cause: error },
          );
        });
      outcomes.push(next);
      return next;
    }
  }

  return { clock, start, startRaw: start, visited, stepCalls: (id) => calls.get(id) ?? 0, notifications };
}
