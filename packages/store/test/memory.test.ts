/** The shared Ledger contract against the in-memory ledger, plus its scheduled pruning. */
import { describe, expect, it, vi } from 'vitest';
import { createMemoryLedger } from '../src/index.js';
import { newJti, T0 } from './helpers/contract/fixtures.js';
import { describeLedgerContract } from './helpers/contract/index.js';

describeLedgerContract('memory', async () => createMemoryLedger({ pruneIntervalMs: 0 }));

describe('memory ledger: scheduled pruning', () => {
  it('prunes on its interval, keeping a grace period after expiry, with an unref timer', async () => {
    vi.useFakeTimers();
    try {
      let now = T0;
      const ledger = createMemoryLedger({ pruneIntervalMs: 1000, pruneGraceMs: 500, clock: () => now });
      const jti = newJti();
      await ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 100, now: T0 });
      await ledger.redemptions.recordOutcome(jti, 'o');
      now = T0 + 550; // expired 450 ms ago: within the grace
      await vi.advanceTimersByTimeAsync(1000);
      expect(
        await ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 100, now: T0 + 100 }),
      ).toEqual({
        status: 'retry',
        outcome: 'o',
      });
      now = T0 + 700; // 600 ms past expiry: beyond the grace
      await vi.advanceTimersByTimeAsync(1000);
      expect(
        await ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 100, now: T0 + 100 }),
      ).toEqual({
        status: 'redeemed',
      });
      await ledger.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('reports a failing scheduled prune to onPruneError', async () => {
    vi.useFakeTimers();
    try {
      const errors: unknown[] = [];
      const ledger = createMemoryLedger({ pruneIntervalMs: 10, onPruneError: (e) => errors.push(e) });
      ledger.prune = async () => {
        throw new Error('boom');
      };
      await vi.advanceTimersByTimeAsync(25);
      expect(errors.length).toBeGreaterThanOrEqual(1);
      await ledger.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects nonsensical schedule options', () => {
    expect(() => createMemoryLedger({ pruneIntervalMs: -1 })).toThrow(/pruneIntervalMs/);
    expect(() => createMemoryLedger({ pruneGraceMs: Number.NaN })).toThrow(/pruneGraceMs/);
  });
});
