/**
 * The round runner: the transport-free heart of Baton. `run()` serves one
 * request of a flow: it checks the client's arguments and answers, opens and
 * checks the echoed requestState, restores the machine, redeems the state in
 * the ledger before any side effect, has the round played, records the
 * outcome for retries and the audit trail, and returns `complete`,
 * `input_required` or `error`. It holds nothing between rounds. Flows that
 * await decisions by others have their instances parked in the ledger, and
 * the runner offers the decision tools' transport-free API: inbox, decide,
 * requests, resume, withdraw. This module only composes the parts: the
 * state (`state.ts`, from `options.ts`), the decisions port
 * (`decisionsPort.ts`), the flow round entry (`serve.ts`) and the decision
 * tools (`decisions/tools.ts`) and the operators' actions (`operators/`).
 */
import type { Flow } from '../authoring/flowTypes.js';
import type { RunRequest } from '../contract/call.js';
import type { RoundOutcome } from '../contract/outcome.js';
import { rewriteLegacyDeciders } from '../decisions/legacyDeciders.js';
import { createTaskTools, type TaskTools } from '../decisions/taskTools.js';
import { createDecisionTools } from '../decisions/tools.js';
import type { DecisionTools, ResumeServer } from '../decisions/types.js';
import { eventCatalog, type SendEventRequest, type SendEventResult, sendEvent } from '../events/send.js';
import { listAbsences, removeAbsence, setAbsence } from '../operators/absences.js';
import { cancelRun } from '../operators/cancel.js';
import { retryStepRun } from '../operators/retryStep.js';
import { terminateRun } from '../operators/terminate.js';
import type { OperatorTools } from '../operators/types.js';
import { type FireOptions, type FireReport, fireDueTimers } from '../schedule/fire.js';
import { createDecisionsPort } from './decisionsPort.js';
import { hasFacet } from './facets.js';
import type { RunnerOptions } from './options.js';
import { run, serve } from './serve.js';
import { createRunnerState, newId } from './state.js';

export type { RunnerOptions } from './options.js';

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
  /** Whether any served flow declares an event (`event()`): serve `POST /events/<name>` when so and a ledger is set. */
  readonly awaitsEvents: boolean;
  /**
   * Send an event to the flows that wait for it: every waiting instance whose correlation key is
   * the event's receives it (see {@link SendEventResult}). An id seen before answers the first
   * delivery's count again; an event no instance waits for yet is kept for its lookback window.
   *
   * @example
   * ```ts
   * const sent = await runner.sendEvent('ci.finished', { id: 'build-812', data: { commit: 'a1b2c3', status: 'success' } });
   * if (sent.status === 'delivered') console.log(`reached ${sent.delivered} runs`);
   * ```
   * @throws Error when the runner has no ledger that keeps events.
   */
  sendEvent(name: string, request: SendEventRequest): Promise<SendEventResult>;
  /** Whether the runner has a ledger (decisions, parked requests and single-use states need one). */
  readonly hasLedger: boolean;
  /** See {@link DecisionTools.inbox}. */
  inbox: DecisionTools['inbox'];
  /** See {@link DecisionTools.decide}. */
  decide: DecisionTools['decide'];
  /** See {@link DecisionTools.describeDecision}. */
  describeDecision: DecisionTools['describeDecision'];
  /** See {@link DecisionTools.answerDecision}. */
  answerDecision: DecisionTools['answerDecision'];
  /** See {@link DecisionTools.delegate}: hand a pending decision to another principal. */
  delegateDecision: DecisionTools['delegate'];
  /** See {@link DecisionTools.requests}. */
  requests: DecisionTools['requests'];
  /** See {@link DecisionTools.runStatus}: the caller's own run, read (the run-status app's). */
  runStatus: DecisionTools['runStatus'];
  /** See {@link DecisionTools.resume}. */
  resume: DecisionTools['resume'];
  /** See {@link DecisionTools.withdraw}. */
  withdraw: DecisionTools['withdraw'];
  /** The tasks extension's `tasks/get`, `tasks/update` and `tasks/cancel` on parked instances. */
  readonly tasks: TaskTools;
  /** What operators do to runs (`baton runs cancel`, `terminate`, `retry-step`): see {@link OperatorTools}. */
  readonly operators: OperatorTools;
  /**
   * Fire the due durable timers of parked instances once, with no client (see `createScheduler`).
   * @throws Error when the runner has no ledger with a scheduler.
   */
  fireDueTimers(options?: FireOptions): Promise<FireReport>;
}

/**
 * Create a round runner.
 *
 * With a ledger, its facets are checked once here against what the flows and options need (see
 * `Ledger` and `RunnerOptions.ledgerFacets`).
 * @throws LedgerFacetMissingError when the ledger lacks a facet a flow or an option needs.
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
  const state = createRunnerState(options);
  const port = createDecisionsPort(state);
  const { flows, ledger } = state;
  // Only a ledger that keeps decisions can hold a legacy decider.
  if (ledger && options.ledger && hasFacet(options.ledger, 'decisions')) {
    void rewriteLegacyDeciders(ledger, state.codec, state.storeNames, state.log);
  }
  const resumeServer: ResumeServer = {
    resume: (flow, binding, context, requestState, inputResponses, row) =>
      serve(state, port, flow, binding, context, requestState, inputResponses, row, 'resume'),
  };
  const tools = createDecisionTools(port, resumeServer);
  const tasks = createTaskTools(port, resumeServer);
  const scheduler = { core: port, owner: newId() };
  const eventPort = { core: port, events: eventCatalog(flows.values()), newId };
  const awaitsDecisions = [...flows.values()].some((flow) => flow.decisions.length > 0);
  const hasDurableSteps = [...flows.values()].some((flow) => flow.steps.length > 0);
  return {
    flows,
    run: (request: RunRequest) => run(state, port, request),
    awaitsDecisions,
    hasDurableSteps,
    hasLedger: ledger !== undefined,
    awaitsEvents: eventPort.events.size > 0,
    sendEvent: (name, request) => sendEvent(eventPort, name, request),
    ...tools,
    delegateDecision: tools.delegate,
    tasks,
    operators: {
      cancel: (request) => cancelRun(port, request),
      terminate: (request) => terminateRun(port, request),
      retryStep: (request) => retryStepRun(port, request),
      setAbsence: (request) => setAbsence(port, request),
      listAbsences: (options) => listAbsences(port, options),
      removeAbsence: (request) => removeAbsence(port, request),
    },
    fireDueTimers: (fire) => fireDueTimers(scheduler, fire),
  };
}
