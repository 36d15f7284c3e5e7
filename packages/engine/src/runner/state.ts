/**
 * The runner's shared state: everything `createRunner` works out once from its
 * options (the flows by name and their machines, the defaulted and checked
 * settings of rounds, durable steps, the single-use protocol and decisions,
 * the inspector's forwarding and the redaction of each flow), as one plain
 * object that the runner's other parts receive explicitly. It holds nothing
 * that changes between rounds (the durable steps' `executing` map aside,
 * which belongs to the step settings). Changes when a setting is added or its
 * default moves.
 */
import type { AnyStateMachine } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import { createFlowServices } from '../authoring/services.js';
import { randomBytesFromPool } from '../codec/randomPool.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { AuditLog } from '../contract/audit.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { FullLedger } from '../contract/ledger.js';
import type { DecisionSettings } from '../decisions/port.js';
import { MAX_ATTEMPTS } from '../decisions/requesterRound.js';
import { taskPollSettings } from '../decisions/taskStatus.js';
import {
  activeRedaction,
  defersEvents,
  type InspectionForward,
  type Inspector,
  inspectionForward,
  type Redaction,
} from '../inspection/inspector.js';
import { checkFlowDeadlines } from '../round/lifetimes.js';
import type { RoundSettings } from '../round/play.js';
import { type SingleUseSettings, singleUseBounds } from '../round/singleUse.js';
import type { StepSettings } from '../steps/durableSteps.js';
import { checkLedgerFacets } from './facets.js';
import { lifetimeOptions, type RunnerOptions } from './options.js';

/** The runner's state, worked out once by {@link createRunnerState}. */
export interface RunnerState {
  readonly flows: ReadonlyMap<string, Flow<any, any>>;
  /** Each flow's machine, with the flow services provided. */
  readonly machines: ReadonlyMap<string, AnyStateMachine>;
  readonly codec: RequestStateCodec;
  /** The runner's ledger, its facets checked against the flows and options (`facets.ts`). */
  readonly ledger: FullLedger | undefined;
  readonly now: () => number;
  readonly log: (event: RunnerLogEvent) => void;
  readonly settings: RoundSettings;
  readonly stepSettings: StepSettings;
  readonly singleUse: SingleUseSettings;
  readonly decisions: DecisionSettings;
  /** Serve flows that need a ledger only for their steps without one (`RunnerOptions.allowReplays`). */
  readonly allowReplays: boolean;
  /** Store readable principal ids beside their hashes (`RunnerOptions.storePrincipalNames`). */
  readonly storeNames: boolean;
  readonly inspect: Inspector | undefined;
  /** The inspector, as every round's actor forwards to it. */
  readonly forward: InspectionForward | undefined;
  /** Whether the inspector may defer events (then a round waits, bounded, for it to flush). */
  readonly deferring: boolean;
  readonly auditLog: AuditLog | undefined;
  /** Each flow's redaction of sensitive inputs and context paths (`undefined`: nothing to redact). */
  readonly redactions: ReadonlyMap<string, Redaction | undefined>;
}

/** A fresh random id (flow instances, the step owner). */
export function newId(): string {
  return randomBytesFromPool(16).toString('base64url');
}

/**
 * Work out the runner's state from its options: defaults applied, every setting checked.
 * @throws Error for two flows of one name; LedgerFacetMissingError for a ledger without a facet
 * the flows or options need; TypeError for a bad setting; FlowDefinitionError for a
 * constant deadline past `maxTtlSeconds`.
 */
export function createRunnerState(options: RunnerOptions): RunnerState {
  const flows = new Map<string, Flow<any, any>>();
  for (const flow of options.flows) {
    if (flows.has(flow.name)) throw new Error(`two flows are named "${flow.name}"`);
    flows.set(flow.name, flow);
  }
  const { codec } = options;
  // The one check of the ledger's facets: no feature asks later whether a method exists.
  const ledger =
    options.ledger === undefined
      ? undefined
      : checkLedgerFacets(options.ledger, {
          flows: flows.values(),
          outbox: options.outbox,
          ledgerFacets: options.ledgerFacets,
        });
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
  return {
    flows,
    machines,
    codec,
    ledger,
    now,
    log,
    settings,
    stepSettings,
    singleUse: { codec, ledger, now, log, ...singleUseBounds(settings.budgetMs, MAX_ATTEMPTS, decisionHoldMs) },
    decisions: {
      holdMs: decisionHoldMs,
      pollMs: Math.max(1, positive('pollMs', pollMs)),
      waitInCallMs: positive('waitInCallSeconds', options.waitInCallSeconds ?? 20) * 1000,
      maxRetryLaterRounds: 3,
      storePrincipalNames: storeNames,
      hookPrincipals: options.hookPrincipals ?? 'hash',
      outbox: options.outbox === true && ledger !== undefined,
      decisionUrl: options.decisionUrl,
      onDecisionRequested: options.onDecisionRequested,
      onDecided: options.onDecided,
      taskPoll: taskPollSettings(positive('taskPollMs', options.taskPollMs ?? 5000)),
    },
    allowReplays: options.allowReplays ?? false,
    storeNames,
    inspect: options.inspect,
    forward,
    deferring,
    auditLog: options.audit,
    redactions,
  };
}
