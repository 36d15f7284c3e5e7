/**
 * The contract of what every ledger has besides its facets: `prune` deletes
 * the rows (of every facet) that expired before now and only those, requests
 * together with their decisions, in batches; `close` refuses work after it,
 * and closing twice is fine. The prune cases clear what earlier suites left
 * first, at times far from theirs.
 */
import type { FullLedger, NewDecision, RecordDecision } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAY,
  decisionRequest,
  newId,
  newJti,
  parked,
  recordDecisionOn,
  redemptionRequest,
  requestDecisionsOn,
  T0,
} from './fixtures.js';

/** Run the prune and close contract against ledgers made by `open` (one for the suite; close opens one more). */
export function lifecycleContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, prune and close`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });
    const request = redemptionRequest;
    const requestDecisions = (list: readonly NewDecision[]) => requestDecisionsOn(ledger, list);
    const recordDecision = (decision: Omit<RecordDecision, 'expectedVersion'>) => recordDecisionOn(ledger, decision);

    describe('prune', () => {
      it('deletes rows that expired before now, and only those', async () => {
        // Far in the future of every other test's rows, so earlier tests do not interfere.
        const base = T0 + 10 * 365 * 24 * 3600_000;
        await ledger.prune(base); // clear everything the earlier tests left behind
        const old = newJti();
        const edge = newJti();
        const live = newJti();
        await ledger.redemptions.redeem(request(old, 'd', base + 100, base));
        await ledger.redemptions.redeem(request(edge, 'd', base + 200, base));
        await ledger.redemptions.redeem(request(live, 'd', base + 10_000, base));
        await ledger.redemptions.recordOutcome(live, 'sealed');
        const oldToken = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: base + 100, now: base });
        const liveToken = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: base + 10_000, now: base });
        const stepOf = newId('F');
        const step = (key: string, expiresAt: number) =>
          ledger.steps.claimStep({ id: stepOf, key, owner: 'o', leaseUntil: base, now: base, expiresAt });
        await step('old#0', base + 100);
        await step('live#0', base + 10_000);

        expect(await ledger.prune(base + 200)).toBe(3); // `old`, `oldToken` and step `old#0`; `edge` expires at now, kept
        expect(await ledger.steps.getStep(stepOf, 'old#0')).toBeUndefined();
        expect(await ledger.steps.getStep(stepOf, 'live#0')).toMatchObject({ status: 'running' });
        expect(await ledger.prune(base + 200)).toBe(0);
        expect(await ledger.redemptions.redeem(request(live, 'd', base + 10_000, base + 300))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redemptions.redeemToken(liveToken, 'p', base + 300)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
        expect(await ledger.redemptions.redeemToken(oldToken, 'p', base + 300)).toEqual({ status: 'unknown' });
        // A pruned jti is still refused: its envelope has expired.
        expect(await ledger.redemptions.redeem(request(old, 'd', base + 100, base + 300))).toEqual({
          status: 'replayed',
        });
        expect(await ledger.prune(base + 20_000)).toBe(4); // edge, live, liveToken (used tokens go when they expire), live#0
      });

      it('deletes requests that expired before now together with their decisions, and only those', async () => {
        const base = T0 + 20 * 365 * DAY;
        await ledger.prune(base); // clear everything the earlier tests left behind
        const [old, edge, live] = [newId(), newId(), newId()];
        await ledger.requests.parkRequest(parked(old, { now: base, expiresAt: base + 100 }), null);
        await ledger.requests.parkRequest(parked(edge, { now: base, expiresAt: base + 200 }), null);
        await ledger.requests.parkRequest(parked(live, { now: base, expiresAt: base + 10_000 }), null);
        await requestDecisions([
          decisionRequest(old, 'manager_approval', { requestedAt: base, deadline: null }),
          decisionRequest(old, 'finance_approval', { requestedAt: base, deadline: null }),
          decisionRequest(edge, 'manager_approval', { requestedAt: base, deadline: null }),
          decisionRequest(live, 'manager_approval', { requestedAt: base, deadline: null }),
        ]);
        await recordDecision({ id: old, key: 'finance_approval', decider: 'bob', content: 'c', now: base });

        expect(await ledger.prune(base + 200)).toBe(3); // `old` and its two decisions; `edge` expires at now, kept
        expect(await ledger.prune(base + 200)).toBe(0);
        expect(await ledger.requests.getRequest(old)).toBeUndefined();
        expect(await ledger.decisions.listDecisions({ id: old })).toEqual([]);
        expect(
          await recordDecision({ id: old, key: 'manager_approval', decider: 'bob', content: 'c', now: base }),
        ).toEqual({ status: 'unknown' });
        // A pruned id can be parked afresh (the engine never reuses one; the ledger does not remember it).
        expect((await ledger.requests.getRequest(edge))?.version).toBe(1);
        expect((await ledger.decisions.listDecisions({ id: edge })).map((d) => d.key)).toEqual(['manager_approval']);
        expect(
          await ledger.requests.parkRequest(parked(live, { now: base + 300, expiresAt: base + 20_000 }), 1),
        ).toEqual({
          status: 'parked',
          version: 2,
        });
        expect(await ledger.prune(base + 10_001)).toBe(2); // edge and its decision; live was extended
        expect(await ledger.prune(base + 20_001)).toBe(2); // live and its decision
        expect(await ledger.requests.listRequests('hash-alice', base)).toEqual([]);
      });

      it('prunes many expired requests in batches', async () => {
        const base = T0 + 30 * 365 * DAY;
        await ledger.prune(base);
        const ids = Array.from({ length: 1200 }, () => newId());
        for (let i = 0; i < ids.length; i += 100) {
          await Promise.all(
            ids
              .slice(i, i + 100)
              .map((id) => ledger.requests.parkRequest(parked(id, { now: base, expiresAt: base + 1 }), null)),
          );
        }
        await ledger.decisions.requestDecisions(ids.map((id) => decisionRequest(id, 'm', { requestedAt: base })));
        expect(await ledger.prune(base + 2)).toBe(2 * ids.length);
        expect(await ledger.requests.getRequest(ids[0]!)).toBeUndefined();
        expect(await ledger.requests.getRequest(ids.at(-1)!)).toBeUndefined();
      });
    });

    describe('close', () => {
      it('refuses work after close, and closing twice is fine', async () => {
        const other = await open();
        await other.close();
        await other.close();
        await expect(other.redemptions.redeem(request(newJti()))).rejects.toThrow(/closed/);
        await expect(other.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1, now: T0 })).rejects.toThrow(
          /closed/,
        );
        await expect(other.requests.parkRequest(parked(newId()), null)).rejects.toThrow(/closed/);
        await expect(other.requests.getRequest('x')).rejects.toThrow(/closed/);
        await expect(other.decisions.listDecisions({ id: 'x' })).rejects.toThrow(/closed/);
        await expect(
          other.decisions.recordDecision({
            id: 'x',
            key: 'k',
            decider: 'bob',
            content: 'c',
            now: T0,
            expectedVersion: 1,
          }),
        ).rejects.toThrow(/closed/);
      });
    });
  });
}
