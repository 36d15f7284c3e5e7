/**
 * The round runner: the transport-free heart of Baton. `run()` serves one
 * request of a flow: it checks the client's arguments and answers (bounded,
 * `jsonInput.ts`), opens and checks the echoed requestState, restores
 * the machine, redeems the state in the ledger before any side effect, has
 * the round played (`round.ts`: deadlines, answers, settling, the next
 * state), records the outcome for retries and the audit trail, and returns
 * `complete`, `input_required` or `error`. It holds nothing between rounds.
 * Flows that await decisions by others have their instances parked in the
 * ledger (`instance.ts`), and the runner offers the decision tools'
 * transport-free API (`decisions.ts`): inbox, decide, requests, resume, withdraw.
 */
import {
  type AnyActorRef,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  createActor,
  type InspectionEvent,
  type Snapshot,
  type StateValue,
} from 'xstate';
import { needsLedgerOnlyForSteps } from '../authoring/flow.js';
import type { Flow } from '../authoring/flowTypes.js';
import { createFlowServices } from '../authoring/services.js';
import { randomBytesFromPool } from '../codec/randomPool.js';
import type { RequestStateCodec, StateBinding } from '../codec/types.js';
import type { AuditAnswer, AuditLog, AuditVia } from '../contract/audit.js';
import type { CallContext, RunnerLogEvent, RunRequest } from '../contract/call.js';
import type { Ledger, ParkedRequest } from '../contract/ledger.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { rewriteLegacyDeciders } from '../decisions/legacyDeciders.js';
import { MAX_ATTEMPTS, type RequesterRound, requesterRound } from '../decisions/parking.js';
import type { AuditRound, PlayInput, RunnerCore } from '../decisions/port.js';
import { createDecisionTools } from '../decisions/tools.js';
import type { DecidedEvent, DecisionRequestedEvent, DecisionTools } from '../decisions/types.js';
import { FlowError } from '../errors.js';
import {
  activeRedaction,
  defersEvents,
  flushInspector,
  type InspectionForward,
  type InspectionObserver,
  type Inspector,
  inspectDirectly,
  inspectionForward,
  type Redaction,
  redactArgs,
  stableInspector,
} from '../inspection/inspector.js';
import { callerKeys, readAnswers } from '../round/body.js';
import { checkRoundInput } from '../round/clientInput.js';
import {
  checkFlowDeadlines,
  DEFAULT_MAX_TTL_SECONDS,
  DEFAULT_TTL_SECONDS,
  type LifetimeSettings,
} from '../round/lifetimes.js';
import { mintedExpiry, Round, type RoundEnd, type RoundSettings } from '../round/play.js';
import { openRoundState, redeemOnce, rejectState, singleUseBounds } from '../round/singleUse.js';
import { expandSnapshot } from '../round/snapshot.js';
import { inertClock } from '../round/timers.js';
import { type FireOptions, type FireReport, fireDueTimers } from '../schedule/fire.js';
import { RoundSteps, type StepSettings, withRunningSteps } from '../steps/durableSteps.js';

/** Options of {@link createRunner}. */
export interface RunnerOptions {
  readonly flows: readonly Flow<any, any>[];
  readonly codec: RequestStateCodec;
  /** When set, every state is single-use: redeemed before the round's side effects. */
  readonly ledger?: Ledger;
  /**
   * Lifetime of minted states in seconds (default 1,800). A state waiting on a deadline lives until
   * the deadline plus `DEADLINE_GRACE_SECONDS` (5 minutes), so the flow's `after` branch is reached.
   */
  readonly ttlSeconds?: number;
  /**
   * Longest lifetime of any state, seconds (default `DEFAULT_MAX_TTL_SECONDS`, 30 days; at least
   * `ttlSeconds`). Checked when the runner is created: a flow with a constant `after` delay whose
   * deadline plus the grace exceeds it is a `FlowDefinitionError`; a delay computed from context
   * is checked when a state is minted (the round fails with a `FlowError`).
   */
  readonly maxTtlSeconds?: number;
  /**
   * Time budget for a round's invoked promises, ms (default 10,000). With a ledger, durable steps
   * (`step()`) still running when it ends keep running; the round answers "retry later".
   */
  readonly roundBudgetMs?: number;
  /**
   * Serve flows whose only need of a ledger is their durable steps without one: their steps then
   * run inside the round (keyed per flow instance all the same), and a replayed or retried round
   * runs them AGAIN (`baton serve --allow-replays`). Default `false`: such flows are refused
   * without a ledger.
   */
  readonly allowReplays?: boolean;
  /** Clock, ms since epoch (default `Date.now`). Use the same clock for the codec. */
  readonly now?: () => number;
  /** Server-side log sink. */
  readonly log?: (event: RunnerLogEvent) => void;
  /**
   * An XState inspector: an observer, a function, or an object with `inspect` (what
   * `@statelyai/inspect`'s `createWebSocketInspector`, `createBrowserInspector` and
   * `createSkyInspector` return). Every round of one flow instance reports under the stable
   * session id `baton:<fid>`, so the inspector shows one run, its root actor named after the
   * machine. Sensitive inputs and context paths are redacted before it sees them. After each
   * round the runner waits (at most 100 ms) for an inspector that may defer (an object with
   * `inspect` or `flush()`) to hand the round's events on before answering.
   */
  readonly inspect?: Inspector;
  /** Where to append one audit entry per round (see `@baton/store`'s `openAuditLog`). */
  readonly audit?: AuditLog;
  /**
   * Flows with decisions: how long a round that waits on a decision is held open, polling the
   * ledger for the flow to move on, ms (default 7,000: well inside a client's request timeout).
   */
  readonly holdMs?: number;
  /** How often a held round reads the ledger, ms (default 300). */
  readonly pollMs?: number;
  /**
   * How long one call waits for decisions before its round completes with a "waiting" result
   * (`{ status: 'waiting', id, waitingFor }`), seconds (default 20). A call also never answers
   * more than 3 requestState-only rounds.
   */
  readonly waitInCallSeconds?: number;
  /**
   * Store readable principal ids beside their keyed hashes (default: only keyed hashes): the
   * requester of a parked request (`requester_name`), the decider of a decision (`decider_name`)
   * and the caller of each audited round (`principal_name`). Without it no table holds a readable
   * principal.
   */
  readonly storePrincipalNames?: boolean;
  /** @deprecated The former name of {@link RunnerOptions.storePrincipalNames}, which it also sets. */
  readonly storeRequesterNames?: boolean;
  /** How hooks see principals: keyed hashes (default) or the ids themselves. */
  readonly hookPrincipals?: 'hash' | 'id';
  /**
   * Write notifications (`decision.requested`, `decision.made`, `request.ended`,
   * `flow.notification`) into the ledger's outbox with each parked write, for delivery
   * from it (`baton serve --notify-webhook`). Default `false`. Needs a ledger with an outbox.
   */
  readonly outbox?: boolean;
  /**
   * Called (not awaited; errors logged) for each decision newly requested: tell the deciders.
   * `requester` is a keyed hash unless `hookPrincipals: 'id'`.
   */
  readonly onDecisionRequested?: (event: DecisionRequestedEvent) => unknown;
  /** Called (not awaited; errors logged) for each decision recorded. */
  readonly onDecided?: (event: DecidedEvent) => unknown;
}

/** The runner's `ttlSeconds` and `maxTtlSeconds`, defaulted and checked (positive seconds, ttl within the cap). */
function lifetimeOptions(options: RunnerOptions): LifetimeSettings {
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  const maxTtlSeconds = options.maxTtlSeconds ?? Math.max(DEFAULT_MAX_TTL_SECONDS, ttlSeconds);
  for (const [name, value] of [
    ['ttlSeconds', ttlSeconds],
    ['maxTtlSeconds', maxTtlSeconds],
  ] as const) {
    if (!Number.isFinite(value) || value <= 0)
      throw new TypeError(`runner: ${name} must be a positive number, got ${value}`);
  }
  if (ttlSeconds > maxTtlSeconds) {
    throw new TypeError(
      `runner: ttlSeconds ${ttlSeconds} is longer than maxTtlSeconds ${maxTtlSeconds}, the longest a state may live`,
    );
  }
  return { ttlSeconds, maxTtlSeconds };
}

/** Serves rounds of the flows it was given. */
export interface Runner {
  /** The flows, by name. */
  readonly flows: ReadonlyMap<string, Flow<any, any>>;
  /**
   * Serve one round.
   * @throws InvalidRequestStateError for an invalid, expired, tampered, foreign or replayed state.
   * @throws InvalidParamsError for arguments or answers nested too deeply or holding a non-finite number.
   * @throws Error for an unknown flow name.
   */
  run(request: RunRequest): Promise<RoundOutcome>;
  /** Whether any served flow declares a decision (serve the decision tools when so and a ledger is set). */
  readonly awaitsDecisions: boolean;
  /**
   * Whether any served flow has durable steps: with a ledger, a call whose steps outlive its wait
   * completes with a "working" result that continues through `resume` (serve the decision tools).
   */
  readonly hasDurableSteps: boolean;
  /** Whether the runner has a ledger (decisions, parked requests and single-use states need one). */
  readonly hasLedger: boolean;
  /** See {@link DecisionTools.inbox}. */
  inbox: DecisionTools['inbox'];
  /** See {@link DecisionTools.decide}. */
  decide: DecisionTools['decide'];
  /** See {@link DecisionTools.requests}. */
  requests: DecisionTools['requests'];
  /** See {@link DecisionTools.resume}. */
  resume: DecisionTools['resume'];
  /** See {@link DecisionTools.withdraw}. */
  withdraw: DecisionTools['withdraw'];
  /**
   * Fire the due durable timers of parked instances once, with no client (see `createScheduler`).
   * @throws Error when the runner has no ledger with a scheduler.
   */
  fireDueTimers(options?: FireOptions): Promise<FireReport>;
}

function newId(): string {
  return randomBytesFromPool(16).toString('base64url');
}

/**
 * A round's actor, on an inert clock. Inspection costs an event per microstep, so it is attached
 * only when `observe` asks for an inspector (reporting under the session `baton:<fid>`) or the
 * audit trail (which records the root's state values into `path`).
 */
function createRoundActor(
  machine: AnyStateMachine,
  from: { snapshot: Snapshot<unknown> } | { input: unknown },
  observe:
    | {
        fid: string;
        path: StateValue[];
        forward: InspectionForward | undefined;
        audit: boolean;
        redaction: Redaction | undefined;
      }
    | undefined,
): AnyActorRef {
  // Options written out rather than spread from `from`: this runs every round.
  if (!observe) {
    return createActor(
      machine,
      'snapshot' in from ? { snapshot: from.snapshot, clock: inertClock } : { input: from.input, clock: inertClock },
    );
  }
  const { fid, path } = observe;
  const forward = observe.forward ? stableInspector(fid, observe.forward, observe.redaction) : undefined;
  // A restored actor is created without `inspect` (XState's dispatch is the costly part) and
  // reports its construction after; a fresh one runs its initial microsteps while constructed.
  const restored = 'snapshot' in from;
  // Without the audit trail nothing records the path: the inspector gets the events as they come.
  if (!observe.audit && forward) {
    const options = restored ? { ...from, clock: inertClock } : { ...from, clock: inertClock, inspect: forward };
    const actor = createActor(machine, options);
    forward.attach(actor, restored);
    return actor;
  }
  const inspect: InspectionObserver = (event: InspectionEvent) => {
    if (event.type === '@xstate.snapshot' && event.actorRef.sessionId === event.rootId) {
      const value = (event.snapshot as { value?: StateValue }).value;
      const last = path[path.length - 1];
      if (value !== undefined && JSON.stringify(value) !== JSON.stringify(last)) path.push(value);
    }
    forward?.next(event);
  };
  const actor = createActor(
    machine,
    restored ? { ...from, clock: inertClock } : { ...from, clock: inertClock, inspect },
  );
  inspectDirectly(actor, inspect, restored);
  return actor;
}

/**
 * Create a round runner.
 *
 * @example
 * ```ts
 * import { type CallContext, createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
 * import { deployProduction } from './flows.js';
 *
 * const runner = createRunner({ flows: [deployProduction], codec: createRequestStateCodec({ keys: [generateKey()] }) });
 * const context: CallContext = { principal: 'alice', method: 'tools/call', target: 'deploy_production' };
 * const args = { version: '1.2.3' };
 * const first = await runner.run({ flow: 'deploy_production', args, context });
 * if (first.type === 'input_required') {
 *   const next = await runner.run({
 *     flow: 'deploy_production',
 *     args,
 *     context,
 *     requestState: first.requestState,
 *     inputResponses: { confirm_deploy: { action: 'accept', content: { confirm: true } } }, // and the other keys asked
 *   });
 * }
 * ```
 */
export function createRunner(options: RunnerOptions): Runner {
  const flows = new Map<string, Flow<any, any>>();
  for (const flow of options.flows) {
    if (flows.has(flow.name)) throw new Error(`two flows are named "${flow.name}"`);
    flows.set(flow.name, flow);
  }
  const { codec, ledger } = options;
  const now = options.now ?? Date.now;
  const log = options.log ?? (() => {});
  const { ttlSeconds, maxTtlSeconds } = lifetimeOptions(options);
  for (const flow of flows.values()) checkFlowDeadlines(flow, maxTtlSeconds);
  const settings: RoundSettings = {
    codec,
    now,
    budgetMs: options.roundBudgetMs ?? 10_000,
    ttlSeconds,
    maxTtlSeconds,
    log,
    recordExpiry: options.audit !== undefined,
  };
  const services = createFlowServices(ledger, now);
  const pollMs = Math.max(1, options.pollMs ?? 300);
  const stepSettings: StepSettings = {
    ledger,
    codec,
    now,
    log,
    services,
    owner: newId(),
    pollMs,
    executing: new Map(),
  };
  const machines = new Map([...flows.values()].map((flow) => [flow.name, flow.machineWith(services)]));
  const deferring = options.inspect !== undefined && defersEvents(options.inspect);
  const forward = options.inspect !== undefined ? inspectionForward(options.inspect) : undefined;
  const redactions = new Map<string, Redaction | undefined>(
    [...flows.values()].map((flow) => [
      flow.name,
      activeRedaction({
        events: new Set(
          Object.entries(flow.inputs)
            .filter(([, spec]) => (spec as { sensitive?: boolean }).sensitive)
            .map(([key]) => `input.${key}`),
        ),
        context: (flow.sensitive ?? []).map((path) => path.split('.')),
      }),
    ]),
  );
  const positive = (name: string, value: number) => {
    if (!Number.isFinite(value) || value < 0) throw new TypeError(`runner: ${name} must be a non-negative number`);
    return value;
  };

  const decisionHoldMs = positive('holdMs', options.holdMs ?? 7000);
  const storeNames = options.storePrincipalNames ?? options.storeRequesterNames ?? false;
  const core: RunnerCore = {
    flows,
    codec,
    ledger,
    now,
    log,
    settings,
    singleUse: { codec, ledger, now, log, ...singleUseBounds(settings.budgetMs, MAX_ATTEMPTS, decisionHoldMs) },
    decisions: {
      holdMs: decisionHoldMs,
      pollMs: Math.max(1, positive('pollMs', pollMs)),
      waitInCallMs: positive('waitInCallSeconds', options.waitInCallSeconds ?? 20) * 1000,
      maxRetryLaterRounds: 3,
      storePrincipalNames: storeNames,
      hookPrincipals: options.hookPrincipals ?? 'hash',
      outbox: options.outbox === true && ledger !== undefined,
      onDecisionRequested: options.onDecisionRequested,
      onDecided: options.onDecided,
    },
    newId,
    accepts(flow, body, event) {
      const actor = createActor(machines.get(flow.name)!, {
        snapshot: withRunningSteps(expandSnapshot(body.s), body.r),
        clock: inertClock,
      });
      return (actor.getSnapshot() as AnyMachineSnapshot).can(event);
    },
    play(input: PlayInput): Promise<RoundEnd> {
      const { flow, fid, path } = input;
      const machine = machines.get(flow.name)!;
      const observe =
        options.inspect !== undefined || options.audit !== undefined
          ? {
              fid,
              path,
              forward,
              audit: options.audit !== undefined,
              redaction: redactions.get(flow.name),
            }
          : undefined;
      const restored = 'body' in input.from ? input.from : undefined;
      const actor =
        input.restoredActor && restored && !observe
          ? input.restoredActor
          : createRoundActor(
              machine,
              restored
                ? { snapshot: withRunningSteps(expandSnapshot(restored.body.s), restored.body.r) }
                : { input: (input.from as { input: unknown }).input },
              observe,
            );
      const steps = new RoundSteps(stepSettings, fid, flow.name, restored?.body.k);
      const played = new Round(settings, {
        flow,
        binding: input.binding,
        fid,
        round: input.round,
        capabilities: input.capabilities,
        answers: input.answers,
        restored,
        received: input.received,
        ...(input.inject ? { inject: input.inject } : {}),
        steps,
      }).play(actor);
      // A step met a ledger outage: abandon the round whatever the machine made of it (`ledgerOutage.ts`).
      const ended = ledger
        ? played.then((end) => {
            if (steps.unavailable) throw steps.unavailable;
            return end;
          })
        : played;
      const inspector = options.inspect;
      // The answer must not overtake the round's inspection events: wait (bounded) for them.
      if (!inspector || !deferring) return ended;
      return ended.then(async (end) => {
        await flushInspector(inspector);
        return end;
      });
    },
    async audit(round: AuditRound): Promise<void> {
      if (!options.audit) return;
      await options.audit
        .append({
          fid: round.fid,
          flow: round.flow.name,
          hash: round.flow.hash,
          round: round.round,
          at: round.started,
          ms: now() - round.started,
          principal: codec.digest(round.principal, 'audit-principal'),
          via: round.via,
          before: round.before,
          after:
            round.after !== undefined ? round.after : round.path.length > 0 ? round.path[round.path.length - 1]! : null,
          path: round.path,
          asked: round.asked,
          received: round.received,
          outcome: round.outcome,
          ...(round.message !== undefined ? { message: round.message } : {}),
          ...(round.args !== undefined && round.flow.auditValues
            ? { args: redactArgs(round.args, redactions.get(round.flow.name)?.context ?? []) }
            : {}),
          ...(storeNames ? { principalName: round.principal } : {}),
          ...(round.expiresAt !== undefined ? { expiresAt: round.expiresAt } : {}),
        })
        .catch((error: unknown) => log({ type: 'flow_error', flow: round.flow.name, fid: round.fid, error }));
    },
  };

  /** A flow declared `needsLedger` on a runner without one: an error round, in words, before anything runs. */
  function needsLedger(flow: Flow): RoundOutcome {
    const error = new FlowError(
      `"${flow.name}" needs a ledger and this server has none: the server must run with a ledger (baton serve --ledger URL).`,
    );
    const fid = newId();
    log({ type: 'flow_error', flow: flow.name, fid, error });
    return { type: 'error', flow: flow.name, fid, round: 1, message: error.message };
  }

  async function run(request: RunRequest): Promise<RoundOutcome> {
    const flow = flows.get(request.flow);
    if (!flow) throw new Error(`unknown flow "${request.flow}"`);
    // Bounded and iterative, before anything recursive (binding, digest, zod) walks client input.
    checkRoundInput(request.args, request.inputResponses);
    if (flow.needsLedger && !ledger && !(options.allowReplays && needsLedgerOnlyForSteps(flow))) {
      return needsLedger(flow);
    }
    const { context } = request;
    const binding: StateBinding = {
      principal: context.principal,
      flow: flow.name,
      method: context.method,
      target: context.target,
      args: request.args,
    };
    return serve(flow, binding, context, request.requestState, request.inputResponses);
  }

  /**
   * Serve one round of `flow` for `binding`: from a presented state, a fresh start, or (resume)
   * the parked request `resumeRow`. `via`: whose call it is, for the audit trail.
   */
  async function serve(
    flow: Flow,
    binding: StateBinding,
    context: Pick<CallContext, 'principal' | 'capabilities'>,
    requestState: string | undefined,
    inputResponses: Readonly<Record<string, unknown>> | undefined,
    resumeRow?: ParkedRequest,
    via: AuditVia = 'call',
  ): Promise<RoundOutcome> {
    const started = now();
    // 1-2. Verify the envelope, its binding and the definition.
    const opened = requestState === undefined ? undefined : openRoundState(core.singleUse, flow, requestState, binding);
    const fid = opened?.claims.fid ?? resumeRow?.id ?? newId();
    const round = (opened?.claims.round ?? 0) + 1;
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
        machines.get(flow.name)!,
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
    const parks = (flow.decisions.length > 0 || flow.steps.length > 0) && ledger !== undefined;
    // 3. Redeem before any side effect (`round/singleUse.ts`), then play.
    let played = false as boolean; // set by the play callback: TS cannot see that
    const outcome = await redeemOnce(
      core.singleUse,
      { flow, fid, round, claims: opened?.claims, answers, started, parks },
      async (): Promise<RoundOutcome> => {
        played = true;
        if (parsedArgs && !parsedArgs.success) {
          const issues = parsedArgs.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`);
          return { type: 'error', ...base, message: `Invalid arguments: ${issues.join('; ')}` };
        }
        if (parks) {
          audited = { received, path };
          return requesterRound(core, {
            flow,
            binding,
            context,
            fid,
            round,
            presented: opened ? { body: opened.body, pending } : undefined,
            input: parsedArgs?.data,
            answers,
            ...(resumeRow ? { resumeRow } : {}),
            audit: audited,
          });
        }
        const end = await core.play({
          flow,
          binding,
          fid,
          round,
          capabilities: context.capabilities,
          answers,
          from: opened ? { body: opened.body, pending } : { input: parsedArgs?.data },
          received,
          path,
          ...(restoredActor ? { restoredActor } : {}),
        });
        return end.type === 'done'
          ? end.outcome
          : end.type === 'ask'
            ? end.mint()
            : end.type === 'working'
              ? { type: 'error', ...base, message: `The flow "${flow.name}" did not finish its steps in time.` }
              : { type: 'error', ...base, message: `The flow "${flow.name}" awaits a decision it does not declare.` };
      },
    );
    // Refused before redeeming (logged there), or answered from the record: nothing to log or audit.
    if (!played) return outcome;
    log({ type: 'round', flow: flow.name, fid, round: outcome.round, outcome: outcome.type, ms: now() - started });
    // Without an audit log there is nothing to assemble (nor an await to pay for).
    if (options.audit) {
      await core.audit({
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

  if (ledger) void rewriteLegacyDeciders(ledger, codec, storeNames, log);
  const tools = createDecisionTools(core, {
    resume: (flow, binding, context, requestState, inputResponses, row) =>
      serve(flow, binding, context, requestState, inputResponses, row, 'resume'),
  });
  const awaitsDecisions = [...flows.values()].some((flow) => flow.decisions.length > 0);
  const hasDurableSteps = [...flows.values()].some((flow) => flow.steps.length > 0);
  const scheduler = { core, owner: newId() };
  return {
    flows,
    run,
    awaitsDecisions,
    hasDurableSteps,
    hasLedger: ledger !== undefined,
    ...tools,
    fireDueTimers: (fire) => fireDueTimers(scheduler, fire),
  };
}
