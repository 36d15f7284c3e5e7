/**
 * The `health` facet's contract: `ping()` answers while the ledger is open
 * and rejects once it is closed; `stats()` names the driver, counts each
 * redemption by result and times it, and counts the failed calls of every
 * facet (a closed ledger's refusals included). The drivers' own figures
 * (batches, the pool, a ping behind a dead proxy) are in `stats.test.ts`.
 */
import type { FullLedger } from '@baton/engine';
import { describe, expect, it } from 'vitest';
import { newJti, redemptionRequest } from './fixtures.js';

/** Run the health contract against a ledger made by `open` (a fresh one for its counts). */
export function healthContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, health`, () => {
    it('pings while open, counts redemptions and the failed calls of every facet, and refuses to ping once closed', async () => {
      const ledger = await open();
      await ledger.health.ping();
      const before = ledger.health.stats();
      expect(before.driver).toEqual(expect.any(String));
      expect(before).toMatchObject({ errors: 0, unavailableErrors: 0, lastErrorAt: null });
      expect(await ledger.redemptions.redeem(redemptionRequest(newJti()))).toEqual({ status: 'redeemed' });
      const after = ledger.health.stats();
      expect(after.redemptions.redeemed).toBe(before.redemptions.redeemed + 1);
      expect(after.redeemLatency.count).toBe(before.redeemLatency.count + 1);

      await ledger.close();
      await expect(ledger.health.ping()).rejects.toThrow(/closed/);
      await expect(ledger.decisions.listVotes('x')).rejects.toThrow(/closed/);
      await expect(ledger.events.getEvent('e', 'x')).rejects.toThrow(/closed/);
      const closed = ledger.health.stats();
      expect(closed.errors).toBe(3);
      expect(closed.lastErrorAt).toEqual(expect.any(Number));
    });
  });
}
