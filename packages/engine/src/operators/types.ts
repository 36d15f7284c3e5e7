/**
 * The operator actions' types: what `baton runs cancel` and `baton runs
 * terminate` ask a runner for. An operator is a principal like any caller
 * (kept in the audit trail as a keyed hash, its name only where names are
 * stored) and always gives a reason, which the audit trail keeps. A leaf of
 * the operators folder: `cancel.ts` and `terminate.ts` implement them.
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
}
