/**
 * The `redemptions` facet's contract: a jti redeemed once, replay-safe retry
 * with the recorded outcome, replay, expiry, release after an outage, a jti
 * redeemed with its outcome in one write (a loser writes nothing; concurrent
 * ones, also from a second handle on the same store), and single-use tokens
 * (minted, redeemed once, unknown, other purpose, expired, concurrent
 * redemptions). Times are explicit (the engine's clock is passed in), so
 * nothing here sleeps.
 */
import { randomBytes } from 'node:crypto';
import type { FullLedger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newJti, redemptionRequest, T0 } from './fixtures.js';

/**
 * Run the redemptions contract against a ledger made by `open` (one for the suite); `second`
 * opens another handle on the same store (another process's, for SQLite and PostgreSQL).
 */
export function redemptionsContract(
  name: string,
  open: () => Promise<FullLedger>,
  second?: () => Promise<FullLedger>,
): void {
  describe(`${name}: Ledger contract, redemptions`, () => {
    let ledger: FullLedger;
    let other: FullLedger | undefined;
    beforeAll(async () => {
      ledger = await open();
      other = second ? await second() : undefined;
    });
    afterAll(async () => {
      await other?.close();
      await ledger?.close();
    });
    const request = redemptionRequest;

    describe('redeem', () => {
      it('redeems a jti the first time', async () => {
        expect(await ledger.redemptions.redeem(request(newJti()))).toEqual({ status: 'redeemed' });
      });

      it('answers in_progress, with when it was redeemed, while the first round recorded no outcome', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 5));
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 + 5 });
        expect(await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 1000))).toEqual({
          status: 'in_progress',
          redeemedAt: T0 + 5,
        });
        // Other answers are a replay, running or not; and once the outcome lands it is a retry.
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
      });

      it('answers an in-progress jti past its envelope expiry as replayed', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti, 'd', T0 + 10_000));
        expect(await ledger.redemptions.redeem(request(jti, 'd', T0 + 10_000, T0 + 10_001))).toEqual({
          status: 'replayed',
        });
      });

      it('answers a retry with identical responses with the recorded outcome, every time', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, 'sealed-outcome-1');
        for (let i = 0; i < 3; i++) {
          expect(await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + i))).toEqual({
            status: 'retry',
            outcome: 'sealed-outcome-1',
          });
        }
      });

      it('rejects the same jti with different responses, even after an outcome was recorded', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        expect(await ledger.redemptions.redeem(request(jti, ''))).toEqual({ status: 'replayed' });
      });

      it('keeps the first recorded outcome', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, 'first');
        await ledger.redemptions.recordOutcome(jti, 'second');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'first' });
      });

      it('stores large outcomes byte for byte', async () => {
        const jti = newJti();
        const outcome = `${randomBytes(96 * 1024).toString('base64url')}ü€`;
        await ledger.redemptions.redeem(request(jti));
        await ledger.redemptions.recordOutcome(jti, outcome);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome });
      });

      it('rejects a retry after the envelope expired, and accepts one at the last valid millisecond', async () => {
        const jti = newJti();
        const expiresAt = T0 + 10_000;
        await ledger.redemptions.redeem(request(jti, 'd', expiresAt));
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti, 'd', expiresAt, expiresAt))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redemptions.redeem(request(jti, 'd', expiresAt, expiresAt + 1))).toEqual({
          status: 'replayed',
        });
      });

      it('never redeems an envelope that is already expired', async () => {
        const jti = newJti();
        expect(await ledger.redemptions.redeem(request(jti, 'd', T0, T0 + 1))).toEqual({ status: 'replayed' });
      });

      it('ignores an outcome for a jti it never redeemed', async () => {
        const jti = newJti();
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
      });

      it('releases a redemption without an outcome and with the same digest, and nothing else', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti));
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-b')).toBe(false);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(true);
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(false);
        // Released: the same state redeems again, once.
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
        // An acknowledged round (outcome recorded) is never released.
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(false);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
        expect(await ledger.redemptions.releaseRedemption(newJti(), 'digest-a')).toBe(false);
      });

      it('lets exactly one of many concurrent redemptions of one jti win', async () => {
        const jti = newJti();
        const results = await Promise.all(Array.from({ length: 40 }, () => ledger.redemptions.redeem(request(jti))));
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        // The others are duplicates of a round still running (same answers, no outcome yet).
        expect(results.filter((r) => r.status === 'in_progress')).toHaveLength(39);
      });

      it('keeps jtis independent', async () => {
        const jtis = Array.from({ length: 50 }, newJti);
        const results = await Promise.all(jtis.map((jti) => ledger.redemptions.redeem(request(jti))));
        expect(results.every((r) => r.status === 'redeemed')).toBe(true);
      });
    });

    describe('redeemWithOutcome', () => {
      const redeemWith = (jti: string, outcome: string, digest?: string, expiresAt?: number, now?: number) =>
        ledger.redemptions.redeemWithOutcome(request(jti, digest, expiresAt, now), outcome);

      it('redeems a new jti with its outcome: a later redeem of the same state is a retry with exactly it', async () => {
        const jti = newJti();
        const outcome = `${randomBytes(48 * 1024).toString('base64url')}ü€`;
        expect(await redeemWith(jti, outcome)).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 1))).toEqual({
          status: 'retry',
          outcome,
        });
      });

      it('answers a second one with the first outcome and does not overwrite it', async () => {
        const jti = newJti();
        expect(await redeemWith(jti, 'first')).toEqual({ status: 'redeemed' });
        expect(await redeemWith(jti, 'second')).toEqual({ status: 'retry', outcome: 'first' });
        // recordOutcome does not overwrite it either.
        await ledger.redemptions.recordOutcome(jti, 'third');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'first' });
      });

      it('answers other responses as replayed', async () => {
        const jti = newJti();
        expect(await redeemWith(jti, 'first')).toEqual({ status: 'redeemed' });
        expect(await redeemWith(jti, 'other', 'digest-b')).toEqual({ status: 'replayed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'first' });
      });

      it('answers in_progress after a plain redeem and writes nothing: the round still records its outcome', async () => {
        const jti = newJti();
        await ledger.redemptions.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 5));
        expect(await redeemWith(jti, 'combined', 'digest-a', T0 + 60_000, T0 + 9)).toEqual({
          status: 'in_progress',
          redeemedAt: T0 + 5,
        });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 + 5 });
        expect(await redeemWith(jti, 'combined', 'digest-b')).toEqual({ status: 'replayed' });
        await ledger.redemptions.recordOutcome(jti, 'sealed');
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
        expect(await redeemWith(jti, 'combined')).toEqual({ status: 'retry', outcome: 'sealed' });
      });

      it('never redeems an expired envelope, and writes nothing for it', async () => {
        const jti = newJti();
        expect(await redeemWith(jti, 'late', 'digest-a', T0, T0 + 1)).toEqual({ status: 'replayed' });
        // Nothing was written: the jti is still new.
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'in_progress', redeemedAt: T0 });
        // A retry past the expiry of a jti redeemed with its outcome is a replay too.
        const done = newJti();
        expect(await redeemWith(done, 'sealed', 'digest-a', T0 + 10_000)).toEqual({ status: 'redeemed' });
        expect(await redeemWith(done, 'sealed', 'digest-a', T0 + 10_000, T0 + 10_000)).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await redeemWith(done, 'sealed', 'digest-a', T0 + 10_000, T0 + 10_001)).toEqual({
          status: 'replayed',
        });
      });

      it('is never released: it has an outcome', async () => {
        const jti = newJti();
        expect(await redeemWith(jti, 'sealed')).toEqual({ status: 'redeemed' });
        expect(await ledger.redemptions.releaseRedemption(jti, 'digest-a')).toBe(false);
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'sealed' });
      });

      it('lets exactly one of many concurrent ones of one jti win; the others get its outcome', async () => {
        const jti = newJti();
        const results = await Promise.all(Array.from({ length: 40 }, (_, i) => redeemWith(jti, `outcome-${i}`)));
        const winner = results.findIndex((r) => r.status === 'redeemed');
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'retry')).toEqual(
          Array.from({ length: 39 }, () => ({ status: 'retry', outcome: `outcome-${winner}` })),
        );
        expect(await ledger.redemptions.redeem(request(jti))).toEqual({
          status: 'retry',
          outcome: `outcome-${winner}`,
        });
      });

      it.skipIf(second === undefined)(
        'lets exactly one win across two handles on one store; the others get its outcome',
        async () => {
          const jti = newJti();
          const results = await Promise.all(
            Array.from({ length: 40 }, (_, i) =>
              (i % 2 === 0 ? ledger : other!).redemptions.redeemWithOutcome(request(jti), `outcome-${i}`),
            ),
          );
          const winner = results.findIndex((r) => r.status === 'redeemed');
          expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
          expect(results.filter((r) => r.status === 'retry')).toEqual(
            Array.from({ length: 39 }, () => ({ status: 'retry', outcome: `outcome-${winner}` })),
          );
          expect(await other!.redemptions.redeem(request(jti))).toEqual({
            status: 'retry',
            outcome: `outcome-${winner}`,
          });
        },
      );

      it('lets exactly one win when plain redemptions race it', async () => {
        const jti = newJti();
        const results = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            i % 2 === 0 ? ledger.redemptions.redeem(request(jti)) : redeemWith(jti, `outcome-${i}`),
          ),
        );
        const winner = results.findIndex((r) => r.status === 'redeemed');
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        // A plain winner: the others are in progress; a combined one: they are retries with its outcome.
        const lost =
          winner % 2 === 0
            ? { status: 'in_progress', redeemedAt: T0 }
            : { status: 'retry', outcome: `outcome-${winner}` };
        expect(results.filter((_, i) => i !== winner)).toEqual(Array.from({ length: 39 }, () => lost));
      });
    });

    describe('tokens', () => {
      it('mints 128-bit base64url codes, all different', async () => {
        const codes = await Promise.all(
          Array.from({ length: 20 }, () =>
            ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 }),
          ),
        );
        for (const code of codes) expect(code).toMatch(/^[A-Za-z0-9_-]{22}$/);
        expect(new Set(codes).size).toBe(codes.length);
      });

      it('redeems a token once, with its data, then reports already_used', async () => {
        const code = await ledger.redemptions.mintToken({
          purpose: 'approve',
          data: '{"id":42}',
          expiresAt: T0 + 1000,
          now: T0,
        });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0 + 1)).toEqual({
          status: 'redeemed',
          data: '{"id":42}',
        });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0 + 2)).toEqual({ status: 'already_used' });
      });

      it('returns undefined data when none was given, and keeps an empty string', async () => {
        const none = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        const empty = await ledger.redemptions.mintToken({ purpose: 'p', data: '', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(none, 'p', T0)).toEqual({ status: 'redeemed', data: undefined });
        expect(await ledger.redemptions.redeemToken(empty, 'p', T0)).toEqual({ status: 'redeemed', data: '' });
      });

      it('reports unknown codes, including garbage and oversized ones', async () => {
        expect(await ledger.redemptions.redeemToken(randomBytes(16).toString('base64url'), 'p', T0)).toEqual({
          status: 'unknown',
        });
        expect(await ledger.redemptions.redeemToken('', 'p', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redemptions.redeemToken('x'.repeat(100_000), 'p', T0)).toEqual({ status: 'unknown' });
      });

      it('treats another purpose as unknown and does not consume the token', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'approve', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(code, 'deny', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redemptions.redeemToken(code, 'approve', T0)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
      });

      it('reports expired tokens (a token stops at expiresAt)', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(code, 'p', T0 + 1000)).toEqual({ status: 'expired' });
        expect(await ledger.redemptions.redeemToken(code, 'p', T0 + 5000)).toEqual({ status: 'expired' });
        const fresh = await ledger.redemptions.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redemptions.redeemToken(fresh, 'p', T0 + 999)).toEqual({
          status: 'redeemed',
          data: undefined,
        });
      });

      it('lets exactly one of many concurrent redemptions of one token win', async () => {
        const code = await ledger.redemptions.mintToken({ purpose: 'p', data: 'd', expiresAt: T0 + 1000, now: T0 });
        const results = await Promise.all(
          Array.from({ length: 40 }, () => ledger.redemptions.redeemToken(code, 'p', T0)),
        );
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'already_used')).toHaveLength(39);
      });
    });
  });
}
