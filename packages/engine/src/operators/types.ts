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
   * or another write won. Needs no flow: only the keys, and a ledger that reopens steps.
   */
  retryStep(request: RetryStepRequest): Promise<RoundOutcome>;
}
