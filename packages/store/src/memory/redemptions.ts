/**
 * The memory ledger's `redemptions` facet: requestStates redeemed once (with
 * their sealed outcomes, for replay-safe retries; in one write with the outcome
 * for a round without side effects; released again after an outage) and
 * single-use tokens, minted as a code whose hash is the key.
 * Every method runs to completion without awaiting, so within one process
 * each redemption is atomic.
 */
import type {
  LedgerRedemptions,
  MintTokenRequest,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
} from '@baton/engine';
import { conflictResult, isEnvelopeExpired, REDEEMED, REPLAYED, tokenFailure, tokenRedeemed } from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';
import type { MemoryState } from './state.js';

/** The `redemptions` facet over `state`. */
export function memoryRedemptions(state: MemoryState): LedgerRedemptions {
  const { redemptions, tokens, assertOpen } = state;
  /** Insert the redemption (with `outcome`, or null) if its jti is new; else why not, from the row. */
  const redeemRow = async (request: RedeemRequest, outcome: string | null): Promise<RedeemResult> => {
    assertOpen();
    const existing = redemptions.get(request.jti);
    if (existing) return conflictResult(existing, request);
    if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
    redemptions.set(request.jti, {
      responsesDigest: request.responsesDigest,
      outcome,
      expiresAt: request.expiresAt,
      redeemedAt: request.now,
    });
    return REDEEMED;
  };

  return {
    redeem: (request: RedeemRequest): Promise<RedeemResult> => redeemRow(request, null),

    redeemWithOutcome: (request: RedeemRequest, sealedOutcome: string): Promise<RedeemResult> =>
      redeemRow(request, sealedOutcome),

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      const row = redemptions.get(jti);
      if (row && row.outcome === null) row.outcome = sealedOutcome;
    },

    async releaseRedemption(jti: string, responsesDigest: string): Promise<boolean> {
      assertOpen();
      const row = redemptions.get(jti);
      if (!row || row.outcome !== null || row.responsesDigest !== responsesDigest) return false;
      return redemptions.delete(jti);
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      tokens.set(hashTokenCode(code), {
        purpose: request.purpose,
        data: request.data ?? null,
        expiresAt: request.expiresAt,
        usedAt: null,
      });
      return code;
    },

    async redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult> {
      assertOpen();
      if (code.length > MAX_TOKEN_CODE_LENGTH) return { status: 'unknown' };
      const row = tokens.get(hashTokenCode(code));
      if (row && row.purpose === purpose && row.usedAt === null && row.expiresAt > now) {
        row.usedAt = now;
        return tokenRedeemed(row.data);
      }
      return tokenFailure(row, purpose, now);
    },
  };
}
