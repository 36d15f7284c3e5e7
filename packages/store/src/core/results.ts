/**
 * The decisions every driver shares, as pure functions over the row a driver
 * read back. A driver first tries the atomic write (insert-if-absent for a
 * jti, update-if-unused for a token); only when that write did not win does it
 * read the row and ask these functions why, so the rules for `retry`,
 * `replayed`, `expired` and friends live in one place. A decision is recorded
 * inside a transaction that reads its row and its request's row first:
 * {@link decisionFailure} says whether it may be recorded, and why not.
 */
import type {
  DecisionStatus,
  RecordDecisionResult,
  RecordVoteResult,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
} from '@baton/engine';
import { LedgerError } from './errors.js';

/** The answer for a jti redeemed for the first time. */
export const REDEEMED: RedeemResult = Object.freeze({ status: 'redeemed' });
/** The answer for a jti that must be rejected. */
export const REPLAYED: RedeemResult = Object.freeze({ status: 'replayed' });

/** What a driver reads back about an existing redemption. */
export interface RedemptionRow {
  readonly responsesDigest: string;
  readonly outcome: string | null;
  readonly expiresAt: number;
  /** When the jti was redeemed (ms since epoch, the redeeming engine's clock). */
  readonly redeemedAt: number;
}

/** What a driver reads back about an existing token. */
export interface TokenRow {
  readonly purpose: string;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

/**
 * Whether an envelope (or its row) has expired at `now`. The envelope is
 * valid up to and including `expiresAt`; rows are pruned only strictly after.
 */
export function isEnvelopeExpired(expiresAt: number, now: number): boolean {
  return now > expiresAt;
}

/** Whether a token can no longer be redeemed at `now` (it stops at `expiresAt`). */
export function isTokenExpired(expiresAt: number, now: number): boolean {
  return expiresAt <= now;
}

/**
 * The answer when a jti could not be inserted because it already has a row
 * (or the row vanished in between, pruned: then it is long expired).
 *
 * For an unexpired row with an identical responses digest: `retry` once the first round
 * recorded its outcome, `in_progress` (with when it was redeemed) while it has none (the
 * engine tells a round still running from one that crashed). Everything else is a replay.
 */
export function conflictResult(row: RedemptionRow | undefined, request: RedeemRequest): RedeemResult {
  if (row === undefined) return REPLAYED;
  if (isEnvelopeExpired(row.expiresAt, request.now)) return REPLAYED;
  if (row.responsesDigest !== request.responsesDigest) return REPLAYED;
  if (row.outcome === null) return { status: 'in_progress', redeemedAt: row.redeemedAt };
  return { status: 'retry', outcome: row.outcome };
}

/** The answer for a token that was just marked used. */
export function tokenRedeemed(data: string | null | undefined): RedeemTokenResult {
  return { status: 'redeemed', data: data ?? undefined };
}

/**
 * The answer when the atomic update did not win: no such code (or a code for
 * another purpose, which must not reveal that it exists), already used, or
 * expired.
 */
export function tokenFailure(row: TokenRow | undefined, purpose: string, now: number): RedeemTokenResult {
  if (row === undefined || row.purpose !== purpose) return { status: 'unknown' };
  if (row.usedAt !== null) return { status: 'already_used' };
  if (isTokenExpired(row.expiresAt, now)) return { status: 'expired' };
  // Unused and unexpired yet not won: only possible if the row changed between the two
  // statements, which a single-use token never does backwards. Refuse rather than guess.
  return { status: 'already_used' };
}

/** What a driver reads back about a decision before recording it. */
export interface DecisionRow {
  /** A {@link DecisionStatus}; anything else is a row this code cannot read. */
  readonly status: DecisionStatus | (string & {});
  readonly deadline: number | null;
}

/** What a driver reads back about the parked request a decision belongs to. */
export interface DecisionRequestRow {
  /** A `RequestStatus`; only `waiting` takes decisions. */
  readonly status: string;
  readonly version: number;
}

/** The answer for a decision just recorded, its request now at `version`. */
export function decisionRecorded(version: number): RecordDecisionResult {
  return { status: 'recorded', version };
}

/**
 * Whether a decision can no longer be made at `now`: it stops at its deadline (a decision
 * due at `deadline` is refused from that millisecond on, and no longer listed as pending).
 */
export function isDecisionExpired(deadline: number | null, now: number): boolean {
  return deadline !== null && deadline <= now;
}

/**
 * Why a decision cannot be recorded, from its row and its request's row as read inside the
 * recording transaction (in the order `RecordDecisionResult` documents): no such (id, key)
 * or no request (never requested, or pruned), already decided (by whoever won), closed (the
 * decision, or its request ended: not `waiting`), past its deadline, or the request written
 * since `expectedVersion` (`conflict`). Status wins over the deadline: a decision that was
 * decided in time stays `already_decided`. `undefined` when the decision may be recorded
 * now: pending, in time, its request waiting at `expectedVersion`.
 */
export function decisionFailure(
  row: DecisionRow | undefined,
  request: DecisionRequestRow | undefined,
  expectedVersion: number,
  now: number,
): Exclude<RecordDecisionResult, { status: 'recorded' }> | undefined {
  if (row === undefined || request === undefined) return { status: 'unknown' };
  if (row.status === 'decided') return { status: 'already_decided' };
  if (row.status === 'closed') return { status: 'closed' };
  if (row.status !== 'pending') throw new LedgerError(`A decision has an unknown status "${row.status}"`);
  if (request.status !== 'waiting') return { status: 'closed' };
  if (isDecisionExpired(row.deadline, now)) return { status: 'expired' };
  if (Number(request.version) !== expectedVersion) return { status: 'conflict' };
  return undefined;
}

/**
 * Why a vote on a quorum decision cannot be recorded: as {@link decisionFailure}, and
 * `already_voted` when `voted` (this voter has a vote on the decision) after `expired` and before
 * `conflict` (the order `RecordVoteResult` documents).
 */
export function voteFailure(
  row: DecisionRow | undefined,
  request: DecisionRequestRow | undefined,
  expectedVersion: number,
  now: number,
  voted: boolean,
): Exclude<RecordVoteResult, { status: 'recorded' }> | undefined {
  const failure = decisionFailure(row, request, expectedVersion, now);
  if (failure !== undefined && failure.status !== 'conflict') return failure;
  if (voted) return { status: 'already_voted' };
  return failure;
}
