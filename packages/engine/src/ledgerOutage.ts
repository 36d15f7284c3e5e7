/**
 * What a round does when the ledger becomes unreachable part-way through it
 * (a `LedgerUnavailableError` from a durable step's claim or record, a
 * single-use token, a parked request or decision): the round is abandoned,
 * never turned into the flow's error outcome, and the runner answers the
 * retryable JSON-RPC `-32000 ledger_unavailable`. Its state was redeemed at
 * the start of the round and no outcome was recorded for it, which the ledger
 * would otherwise treat as a round that crashed mid-way (`replayed`: the flow
 * instance lost). Since this round did not crash but was cut short by the
 * operator's database, the runner RELEASES the redemption (deletes the row,
 * only while it has no outcome and the same answers: `Ledger.releaseRedemption`,
 * which the PostgreSQL ledger retries while the database restarts) before it
 * answers, so the client's retry of the same requestState runs the round
 * again. Re-running is safe for what the ledger keeps: a durable step recorded
 * before the outage is delivered from its record, never run again; one whose
 * claim failed never ran; one that ran but whose record failed keeps being
 * recorded in the background on this runner (a later round awaits it), and
 * runs again elsewhere only with its idempotency key after its lease ends; a
 * token call that failed did nothing; parked requests are compare-and-set, so
 * the re-run continues from whatever was parked. What the ledger does not
 * keep, a plain invoked promise that completed earlier in the same round, runs
 * again: put external effects in `step()`. The alternative, letting the ledger
 * re-run any redeemed jti without an outcome, would also re-run rounds whose
 * server crashed mid-way or that are still running elsewhere.
 */

import type { RunnerLogEvent } from './contract/call.js';
import type { Ledger } from './contract/ledger.js';
import { LedgerUnavailableError } from './errors.js';

/** Whether `error` is the ledger being unreachable (never a bug or a refusal). */
export function isLedgerUnavailable(error: unknown): error is LedgerUnavailableError {
  return error instanceof LedgerUnavailableError;
}

/**
 * Release the redemption of a round cut short by a ledger outage (see the module comment), so
 * the same requestState may be retried. Never throws: a release that fails is logged (the
 * retry is then refused as `replayed`).
 */
export async function releaseAfterOutage(
  ledger: Ledger,
  redemption: { readonly jti: string; readonly responsesDigest: string },
  where: { readonly flow: string; readonly fid: string },
  log: (event: RunnerLogEvent) => void,
): Promise<void> {
  if (!ledger.releaseRedemption) return;
  try {
    await ledger.releaseRedemption(redemption.jti, redemption.responsesDigest);
  } catch (error) {
    log({ type: 'flow_error', flow: where.flow, fid: where.fid, error });
  }
}
