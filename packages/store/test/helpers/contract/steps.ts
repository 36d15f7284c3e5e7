/**
 * The `steps` facet's contract: durable steps claimed under a lease (held
 * for another owner until it ends, renewed, taken over once it ended),
 * recorded once and handed back to every later claimer, and reopened once by
 * an operator after a failure.
 */
import type { FullLedger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, newId, stepClaim, T0 } from './fixtures.js';

/** Run the steps contract against a ledger made by `open` (one for the suite). */
export function stepsContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, steps`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });

    describe('durable steps', () => {
      it('claims once: another owner is told it is held until the lease ends', async () => {
        const id = newId('F');
        expect(await ledger.steps.claimStep(stepClaim(id, 'a'))).toEqual({ status: 'claimed', claims: 1 });
        expect(await ledger.steps.claimStep(stepClaim(id, 'b'))).toEqual({
          status: 'held',
          owner: 'a',
          leaseUntil: T0 + 60_000,
        });
        expect(await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + 59_999 }))).toMatchObject({
          status: 'held',
        });
        // Its owner renews the lease (not a new claim).
        expect(
          await ledger.steps.claimStep(stepClaim(id, 'a', { leaseUntil: T0 + 120_000, now: T0 + 50_000 })),
        ).toEqual({
          status: 'claimed',
          claims: 1,
        });
        expect(await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + 60_000 }))).toMatchObject({
          status: 'held',
        });
        // Once the lease ended, another owner takes it over.
        expect(
          await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + 120_000, leaseUntil: T0 + 180_000 })),
        ).toEqual({
          status: 'claimed',
          claims: 2,
        });
        expect(await ledger.steps.getStep(id, 'refund#0')).toEqual({
          id,
          key: 'refund#0',
          status: 'running',
          owner: 'b',
          leaseUntil: T0 + 180_000,
          claims: 2,
          outcome: null,
          recordedAt: null,
          expiresAt: T0 + DAY,
        });
      });

      it('records once; a recorded step is handed back to every claimer', async () => {
        const id = newId('F');
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'x', now: T0 }),
        ).toEqual({
          status: 'unknown',
        });
        await ledger.steps.claimStep(stepClaim(id, 'a'));
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'sealed-1', now: T0 + 5 }),
        ).toEqual({ status: 'recorded' });
        const second = await ledger.steps.recordStep({
          id,
          key: 'refund#0',
          status: 'failed',
          outcome: 'sealed-2',
          now: T0 + 6,
        });
        expect(second).toMatchObject({
          status: 'already_recorded',
          record: { status: 'succeeded', outcome: 'sealed-1' },
        });
        const record = {
          id,
          key: 'refund#0',
          status: 'succeeded',
          owner: 'a',
          leaseUntil: T0 + 60_000,
          claims: 1,
          outcome: 'sealed-1',
          recordedAt: T0 + 5,
          expiresAt: T0 + DAY,
        };
        expect(await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + DAY - 1 }))).toEqual({
          status: 'recorded',
          record,
        });
        expect(await ledger.steps.claimStep(stepClaim(id, 'a'))).toEqual({ status: 'recorded', record });
        expect(await ledger.steps.getStep(id, 'refund#0')).toEqual(record);
        expect(await ledger.steps.getStep(id, 'refund#1')).toBeUndefined();
      });

      it('a step that outlived its lease and finishes first still records; the new owner gets its record', async () => {
        const id = newId('F');
        await ledger.steps.claimStep(stepClaim(id, 'a'));
        await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + 60_000 }));
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'late-a', now: T0 }),
        ).toEqual({
          status: 'recorded',
        });
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'b', now: T0 + 1 }),
        ).toMatchObject({ status: 'already_recorded', record: { status: 'failed', outcome: 'late-a', owner: 'b' } });
      });

      it('reopens a failed step once (an operator retry): the next claim takes it over and runs it again', async () => {
        const id = newId('F');
        expect(ledger.steps.reopenStep).toBeDefined();
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0)).toBe(false); // unknown
        await ledger.steps.claimStep(stepClaim(id, 'a'));
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0)).toBe(false); // running
        await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'sealed-error', now: T0 + 5 });
        const [first, second] = await Promise.all([
          ledger.steps.reopenStep(id, 'refund#0', T0 + 10),
          ledger.steps.reopenStep(id, 'refund#0', T0 + 10),
        ]);
        expect([first, second].sort()).toEqual([false, true]);
        expect(await ledger.steps.getStep(id, 'refund#0')).toMatchObject({
          status: 'running',
          outcome: null,
          recordedAt: null,
          leaseUntil: 0,
          claims: 1,
        });
        // Its former owner or any other takes it at once, as a new owner.
        expect(await ledger.steps.claimStep(stepClaim(id, 'b', { now: T0 + 11 }))).toEqual({
          status: 'claimed',
          claims: 2,
        });
        expect(
          await ledger.steps.recordStep({ id, key: 'refund#0', status: 'succeeded', outcome: 'ok', now: T0 + 12 }),
        ).toEqual({
          status: 'recorded',
        });
        expect(await ledger.steps.reopenStep(id, 'refund#0', T0 + 13)).toBe(false); // succeeded
      });
    });
  });
}
