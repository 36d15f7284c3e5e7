/**
 * The operator actions' types: what `baton runs cancel`, `baton runs
 * terminate` and `baton runs retry-step` ask a runner for. An operator is a principal like any caller
 * (kept in the audit trail as a keyed hash, its name only where names are
 * stored) and always gives a reason, which the audit trail keeps. A leaf of
 * the operators folder: `cancel.ts`, `terminate.ts` and `retryStep.ts` implement them.
 */
import type { RoundOutcome } from '../contract/outcome.js';

/** An operator's action on one run (a parked request). */
export interface OperatorRequest {
  /** The request id (the flow instance). */
  readonly id: string;
  /** The operator's principal (`--as NAME`, or the login name). */
  readonly operator: string;
  /** Why: recorded in the audit trail as the entry's `message`. */
  readonly reason: string;
}

/** An operator's retry of one durable step of a run (`baton runs retry-step <id> <step>`). */
export interface RetryStepRequest extends OperatorRequest {
  /**
   * The step: its id (`charge`: the invocation the run waits on) or one invocation's key as
   * `baton runs show` lists it (`charge#0`).
   */
  readonly step: string;
}

/** An operator's absence delegate: while `principal` is away, `delegate` decides for them (`baton delegates set`). */
export interface SetAbsenceRequest {
  /** The absent principal. */
  readonly principal: string;
  /** Who acts for them (never the principal). */
  readonly delegate: string;
  /** The roles of `principal` the delegate uses (stated explicitly: a role `principal` lacks is not checked here). */
  readonly roles: readonly string[];
  /** From when (ms since epoch, inclusive) to when (exclusive). */
  readonly startsAt: number;
  readonly endsAt: number;
  /** Why: kept with the delegate. */
  readonly reason: string;
  /** The operator's principal. */
  readonly operator: string;
}

/** An operator's removal of an absence delegate (`baton delegates remove <id> --reason`). */
export interface RemoveAbsenceRequest {
  readonly id: string;
  readonly operator: string;
  readonly reason: string;
}

/**
 * An absence delegate as operators see it (principals as names when names are stored, else keyed
 * hashes; times in ms since epoch). `active`: in force now.
 */
export interface AbsenceView {
  readonly id: string;
  readonly principal: string;
  readonly delegate: string;
  readonly roles: readonly string[];
  readonly startsAt: number;
  readonly endsAt: number;
  readonly reason: string;
  readonly setBy: string;
  readonly createdAt: number;
  readonly active: boolean;
  readonly removedAt?: number;
  readonly removedReason?: string;
  readonly removedBy?: string;
}

/** What setting or removing an absence delegate answers. */
export type AbsenceResult =
  | { readonly status: 'set' | 'removed'; readonly delegation: AbsenceView }
  | { readonly status: 'refused'; readonly message: string };

/** What operators may do to runs, on a runner with a ledger. */
export interface OperatorTools {
  /**
   * Cancel a waiting run through its flow: deliver the flow's withdrawal event (as `withdraw`
   * does for its requester), in one compare-and-set write; the run ends `withdrawn` (or goes on,
   * where the flow's withdrawal path leads on). `complete` saying so; an `error` refusal with a
   * sentence when the flow has no withdrawal path where it stands, the run has ended, or another
   * write won (saying what won).
   */
  cancel(request: OperatorRequest): Promise<RoundOutcome>;
  /**
   * End a waiting run whatever its flow says: parked `terminated` with the final outcome
   * "Terminated by an operator: <reason>" (an error result for its requester), its pending
   * decisions closed, in one compare-and-set write. Refused with a sentence when the run has
   * ended or another write won (saying what won). Needs no flow: only the keys.
   */
  terminate(request: OperatorRequest): Promise<RoundOutcome>;
  /**
   * Run a durable step again after its retries ran out: the run must be waiting on that step and
   * its record must say `failed`. The step's record is reopened (same key, so the same
   * idempotency key) and the run is written due at once, in one compare-and-set, so the next
   * round (any server's scheduler, about a second later, or the requester's `baton_resume`)
   * claims it and runs it with fresh attempts. `complete` saying so; an `error` refusal with a
   * sentence when the run is not waiting on the step, the step has not failed, the run has ended,
   * or another write won. Needs no flow: only the keys, and a ledger with the `steps` facet.
   */
  retryStep(request: RetryStepRequest): Promise<RoundOutcome>;
  /**
   * Set an absence delegate: while `principal` is away (`startsAt` to `endsAt`), `delegate` may
   * make any decision `principal` with `roles` may make (never on a request either of them made).
   * @returns `{ status: 'set', delegation }`, or `{ status: 'refused', message }` for bad input or
   *   no ledger.
   * @throws LedgerFacetMissingError on a ledger without the `decisions` facet (declare it in
   *   `RunnerOptions.ledgerFacets` to have createRunner refuse the ledger instead).
   */
  setAbsence(request: SetAbsenceRequest): Promise<AbsenceResult>;
  /**
   * Absence delegates, newest first; removed ones only with `all`.
   * @throws Error without a ledger; LedgerFacetMissingError on a ledger without the `decisions` facet.
   */
  listAbsences(options?: { readonly all?: boolean }): Promise<AbsenceView[]>;
  /** Remove a standing absence delegate (kept, marked removed, with the operator and reason). */
  removeAbsence(request: RemoveAbsenceRequest): Promise<AbsenceResult>;
}
