/**
 * The port of the decisions subsystem: what the runner lends the parked-flow
 * rounds and the decision tools, as XState's `ActorScope` is what an actor is
 * given by the system that runs it. The runner's settings and the few
 * operations every entry point needs (play a round of a flow on a fresh actor,
 * append an audit entry, call a hook without letting it fail or block a
 * round). `runner/createRunner.ts` builds one `DecisionsPort` and implements it;
 * `playParked.ts` and `requesterRound.ts` (flow instances parked while they await others) and the
 * decision tools (`tools.ts`, `decide.ts`, `requestTools.ts`, `access.ts`,
 * `advance.ts`) use it and never import the runner. Internal: nothing here is
 * exported from the package.
 */
import type { AnyActorRef, EventObject, StateValue } from 'xstate';
import type { Flow } from '../authoring/flowTypes.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { AuditAnswer, AuditEntry, AuditOutcome, AuditVia } from '../contract/audit.js';
import type { RunnerLogEvent } from '../contract/call.js';
import type { FullLedger } from '../contract/ledger.js';
import type { RoundBody } from '../round/body.js';
import type { RoundEnd, RoundInput, RoundSettings } from '../round/play.js';
import type { SingleUseSettings } from '../round/singleUse.js';
import type { TaskPollSettings } from './taskStatus.js';
import type { DecidedEvent, DecisionRequestedEvent } from './types.js';

/** The decision settings of a runner, defaults applied. */
export interface DecisionSettings {
  /** How long a waiting round is held open polling the ledger, ms. */
  readonly holdMs: number;
  /** How often a held round reads the parked request, ms. */
  readonly pollMs: number;
  /** Total wait of one call before its round completes with a "waiting" result, ms. */
  readonly waitInCallMs: number;
  /** At most this many requestState-only rounds in one call. */
  readonly maxRetryLaterRounds: number;
  /** Store readable principal ids beside their keyed hashes (requesters, deciders, the audit trail). */
  readonly storePrincipalNames: boolean;
  readonly hookPrincipals: 'hash' | 'id';
  /** Write notifications into the ledger's outbox with each parked write (`decisions/outbox.ts`). */
  readonly outbox: boolean;
  /** The decision page's URL for a request (and key, when it awaits several), for `decision.requested`'s `data.url`. */
  readonly decisionUrl: ((id: string, key: string) => string) | undefined;
  readonly onDecisionRequested: ((event: DecisionRequestedEvent) => unknown) | undefined;
  readonly onDecided: ((event: DecidedEvent) => unknown) | undefined;
  /** The poll intervals a task suggests (`taskStatus.ts`). */
  readonly taskPoll: TaskPollSettings;
}

/**
 * What one round of a flow is played from: a round's input (`round/play.ts`), except that it starts
 * from a restored body or the parsed arguments of a first call, and records the state values it
 * passes through.
 */
export interface PlayInput
  extends Pick<
    RoundInput,
    | 'flow'
    | 'binding'
    | 'fid'
    | 'round'
    | 'capabilities'
    | 'answers'
    | 'inject'
    | 'received'
    | 'parkStepsAfterMs'
    | 'onProgress'
  > {
  /** A restored body and the caller's keys it awaits, or the parsed arguments of a first call. */
  readonly from: { readonly body: RoundBody; readonly pending: readonly string[] } | { readonly input: unknown };
  /** State values passed through (for the audit trail; filled only when observed). */
  readonly path: StateValue[];
  /**
   * An actor already restored (created, not started) on exactly `from.body`, without
   * observers: played instead of restoring the same snapshot a second time. Ignored when the
   * round is observed (inspector or audit trail), whose actor needs its observers from creation.
   */
  readonly restoredActor?: AnyActorRef;
}

/** One round as the audit trail records it. */
export interface AuditRound {
  /** The flow (what the entry names of it: a run whose flow is not served has only its row's name and hash). */
  readonly flow: Pick<Flow, 'name' | 'hash' | 'auditValues'>;
  readonly fid: string;
  readonly round: number;
  readonly started: number;
  /** The caller's principal (hashed before it is written). */
  readonly principal: string;
  /** Whose call ran the round. */
  readonly via: AuditVia;
  readonly before: StateValue | null;
  /** The state it ended in; default: the last of `path`. `null`: another call's round ended the instance. */
  readonly after?: StateValue | null;
  readonly path: readonly StateValue[];
  readonly asked: readonly string[];
  readonly received: readonly AuditAnswer[];
  readonly outcome: AuditOutcome;
  readonly message?: string;
  /** The parsed arguments of a first round (recorded, redacted, only with `auditValues`). */
  readonly args?: unknown;
  /** When the requestState handed out expires (ms), for an `input_required` round. */
  readonly expiresAt?: number;
}

/** Shared by the runner's modules. */
export interface DecisionsPort {
  readonly flows: ReadonlyMap<string, Flow<any, any>>;
  readonly codec: RequestStateCodec;
  readonly ledger: FullLedger | undefined;
  readonly now: () => number;
  readonly log: (event: RunnerLogEvent) => void;
  readonly settings: RoundSettings;
  readonly decisions: DecisionSettings;
  /** The single-use protocol's settings (`round/singleUse.ts`): every presented state goes through it. */
  readonly singleUse: SingleUseSettings;
  /** Play one round on a fresh actor (observed when the runner inspects or audits). */
  play(input: PlayInput): Promise<RoundEnd>;
  /** Append an audit entry when the runner has an audit log; never throws. */
  audit(round: AuditRound): Promise<void>;
  /** Every audited round of instance `fid`, in order (`[]` without an audit log, or when it cannot be read). */
  readonly rounds?: (fid: string) => Promise<readonly AuditEntry[]>;
  /** A fresh random id (flow instances). */
  newId(): string;
  /** Whether the machine, restored from `body`, would take `event` (nothing runs). */
  accepts(flow: Flow, body: RoundBody, event: EventObject): boolean;
}

/**
 * Call a hook without awaiting it: a hook that throws or rejects is logged, a slow one never
 * holds the round.
 */
export function callHook<E>(
  core: Pick<DecisionsPort, 'log'>,
  name: 'onDecisionRequested' | 'onDecided',
  hook: ((event: E) => unknown) | undefined,
  event: E,
): void {
  if (!hook) return;
  Promise.resolve()
    .then(() => hook(event))
    .catch((error: unknown) => core.log({ type: 'hook_error', hook: name, error }));
}
