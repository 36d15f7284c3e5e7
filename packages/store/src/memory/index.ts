/**
 * The in-memory ledger: two Maps behind the `Ledger` interface, for tests and
 * for single-process deployments that accept losing the ledger on restart.
 * Every method runs to completion without awaiting, so within one process
 * redemptions are atomic; nothing is shared with other processes. Same
 * semantics as the SQLite and PostgreSQL ledgers, including pruning.
 */
import type { Ledger, MintTokenRequest, RedeemRequest, RedeemResult, RedeemTokenResult } from '@baton/engine';
import { LedgerError } from '../core/errors.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import {
  conflictResult,
  isEnvelopeExpired,
  REDEEMED,
  REPLAYED,
  type RedemptionRow,
  type TokenRow,
  tokenFailure,
  tokenRedeemed,
} from '../core/results.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';

export { createMemoryAuditLog, type MemoryAuditLogOptions } from './audit.js';

/** Options for {@link createMemoryLedger}. */
export type MemoryLedgerOptions = PruningOptions;

interface MemoryRedemption extends RedemptionRow {
  outcome: string | null;
}

interface MemoryToken extends TokenRow {
  usedAt: number | null;
  readonly data: string | null;
}

/**
 * Create an in-memory ledger.
 *
 * @example
 * ```ts
 * import { createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
 * import { createMemoryLedger } from '@baton/store/memory';
 *
 * const ledger = createMemoryLedger(); // every requestState single-use, within this process
 * const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: [generateKey()] }), ledger });
 * ```
 */
export function createMemoryLedger(options: MemoryLedgerOptions = {}): Ledger {
  const redemptions = new Map<string, MemoryRedemption>();
  const tokens = new Map<string, MemoryToken>();
  let closed = false;

  const ledger: Ledger = {
    async redeem(request: RedeemRequest): Promise<RedeemResult> {
      assertOpen();
      const existing = redemptions.get(request.jti);
      if (existing) return conflictResult(existing, request);
      if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
      redemptions.set(request.jti, {
        responsesDigest: request.responsesDigest,
        outcome: null,
        expiresAt: request.expiresAt,
      });
      return REDEEMED;
    },

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      const row = redemptions.get(jti);
      if (row && row.outcome === null) row.outcome = sealedOutcome;
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

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const [jti, row] of redemptions) {
        if (row.expiresAt < now && redemptions.delete(jti)) removed++;
      }
      for (const [hash, row] of tokens) {
        if (row.expiresAt < now && tokens.delete(hash)) removed++;
      }
      return removed;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      redemptions.clear();
      tokens.clear();
    },
  };

  const schedule = startPruning((now) => ledger.prune(now), options);
  return ledger;

  function assertOpen(): void {
    if (closed) throw new LedgerError('The memory ledger is closed');
  }
}
