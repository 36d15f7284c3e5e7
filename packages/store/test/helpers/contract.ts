/**
 * The behaviour every ledger must share, as one suite run against the memory,
 * SQLite and PostgreSQL ledgers: redemption, replay-safe retry, replay,
 * expiry, single-use tokens, pruning and closing. Times are explicit (the
 * engine's clock is passed in), so nothing here sleeps.
 */
import { randomBytes } from 'node:crypto';
import type { Ledger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** A fixed "now" for the suite (ms). */
export const T0 = 1_800_000_000_000;

/** A random jti like the codec's (96 bits, base64url). */
export function newJti(): string {
  return randomBytes(12).toString('base64url');
}

/** Run the shared contract against ledgers made by `open` (one per suite) and torn down by `dispose`. */
export function ledgerContract(name: string, open: () => Promise<Ledger>, dispose?: () => Promise<void>): void {
  describe(`${name}: Ledger contract`, () => {
    let ledger: Ledger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
      await dispose?.();
    });

    const request = (jti: string, digest = 'digest-a', expiresAt = T0 + 60_000, now = T0) => ({
      jti,
      responsesDigest: digest,
      expiresAt,
      now,
    });

    describe('redeem', () => {
      it('redeems a jti the first time', async () => {
        expect(await ledger.redeem(request(newJti()))).toEqual({ status: 'redeemed' });
      });

      it('rejects a second redemption whose first round recorded no outcome (crashed or still running)', async () => {
        const jti = newJti();
        await ledger.redeem(request(jti));
        expect(await ledger.redeem(request(jti))).toEqual({ status: 'replayed' });
        expect(await ledger.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + 1000))).toEqual({ status: 'replayed' });
      });

      it('answers a retry with identical responses with the recorded outcome, every time', async () => {
        const jti = newJti();
        await ledger.redeem(request(jti));
        await ledger.recordOutcome(jti, 'sealed-outcome-1');
        for (let i = 0; i < 3; i++) {
          expect(await ledger.redeem(request(jti, 'digest-a', T0 + 60_000, T0 + i))).toEqual({
            status: 'retry',
            outcome: 'sealed-outcome-1',
          });
        }
      });

      it('rejects the same jti with different responses, even after an outcome was recorded', async () => {
        const jti = newJti();
        await ledger.redeem(request(jti));
        expect(await ledger.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        await ledger.recordOutcome(jti, 'sealed');
        expect(await ledger.redeem(request(jti, 'digest-b'))).toEqual({ status: 'replayed' });
        expect(await ledger.redeem(request(jti, ''))).toEqual({ status: 'replayed' });
      });

      it('keeps the first recorded outcome', async () => {
        const jti = newJti();
        await ledger.redeem(request(jti));
        await ledger.recordOutcome(jti, 'first');
        await ledger.recordOutcome(jti, 'second');
        expect(await ledger.redeem(request(jti))).toEqual({ status: 'retry', outcome: 'first' });
      });

      it('stores large outcomes byte for byte', async () => {
        const jti = newJti();
        const outcome = `${randomBytes(96 * 1024).toString('base64url')}ü€`;
        await ledger.redeem(request(jti));
        await ledger.recordOutcome(jti, outcome);
        expect(await ledger.redeem(request(jti))).toEqual({ status: 'retry', outcome });
      });

      it('rejects a retry after the envelope expired, and accepts one at the last valid millisecond', async () => {
        const jti = newJti();
        const expiresAt = T0 + 10_000;
        await ledger.redeem(request(jti, 'd', expiresAt));
        await ledger.recordOutcome(jti, 'sealed');
        expect(await ledger.redeem(request(jti, 'd', expiresAt, expiresAt))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redeem(request(jti, 'd', expiresAt, expiresAt + 1))).toEqual({ status: 'replayed' });
      });

      it('never redeems an envelope that is already expired', async () => {
        const jti = newJti();
        expect(await ledger.redeem(request(jti, 'd', T0, T0 + 1))).toEqual({ status: 'replayed' });
      });

      it('ignores an outcome for a jti it never redeemed', async () => {
        const jti = newJti();
        await ledger.recordOutcome(jti, 'sealed');
        expect(await ledger.redeem(request(jti))).toEqual({ status: 'redeemed' });
        expect(await ledger.redeem(request(jti))).toEqual({ status: 'replayed' });
      });

      it('lets exactly one of many concurrent redemptions of one jti win', async () => {
        const jti = newJti();
        const results = await Promise.all(Array.from({ length: 40 }, () => ledger.redeem(request(jti))));
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'replayed')).toHaveLength(39);
      });

      it('keeps jtis independent', async () => {
        const jtis = Array.from({ length: 50 }, newJti);
        const results = await Promise.all(jtis.map((jti) => ledger.redeem(request(jti))));
        expect(results.every((r) => r.status === 'redeemed')).toBe(true);
      });
    });

    describe('tokens', () => {
      it('mints 128-bit base64url codes, all different', async () => {
        const codes = await Promise.all(
          Array.from({ length: 20 }, () => ledger.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 })),
        );
        for (const code of codes) expect(code).toMatch(/^[A-Za-z0-9_-]{22}$/);
        expect(new Set(codes).size).toBe(codes.length);
      });

      it('redeems a token once, with its data, then reports already_used', async () => {
        const code = await ledger.mintToken({ purpose: 'approve', data: '{"id":42}', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redeemToken(code, 'approve', T0 + 1)).toEqual({ status: 'redeemed', data: '{"id":42}' });
        expect(await ledger.redeemToken(code, 'approve', T0 + 2)).toEqual({ status: 'already_used' });
      });

      it('returns undefined data when none was given, and keeps an empty string', async () => {
        const none = await ledger.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        const empty = await ledger.mintToken({ purpose: 'p', data: '', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redeemToken(none, 'p', T0)).toEqual({ status: 'redeemed', data: undefined });
        expect(await ledger.redeemToken(empty, 'p', T0)).toEqual({ status: 'redeemed', data: '' });
      });

      it('reports unknown codes, including garbage and oversized ones', async () => {
        expect(await ledger.redeemToken(randomBytes(16).toString('base64url'), 'p', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redeemToken('', 'p', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redeemToken('x'.repeat(100_000), 'p', T0)).toEqual({ status: 'unknown' });
      });

      it('treats another purpose as unknown and does not consume the token', async () => {
        const code = await ledger.mintToken({ purpose: 'approve', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redeemToken(code, 'deny', T0)).toEqual({ status: 'unknown' });
        expect(await ledger.redeemToken(code, 'approve', T0)).toEqual({ status: 'redeemed', data: undefined });
      });

      it('reports expired tokens (a token stops at expiresAt)', async () => {
        const code = await ledger.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redeemToken(code, 'p', T0 + 1000)).toEqual({ status: 'expired' });
        expect(await ledger.redeemToken(code, 'p', T0 + 5000)).toEqual({ status: 'expired' });
        const fresh = await ledger.mintToken({ purpose: 'p', expiresAt: T0 + 1000, now: T0 });
        expect(await ledger.redeemToken(fresh, 'p', T0 + 999)).toEqual({ status: 'redeemed', data: undefined });
      });

      it('lets exactly one of many concurrent redemptions of one token win', async () => {
        const code = await ledger.mintToken({ purpose: 'p', data: 'd', expiresAt: T0 + 1000, now: T0 });
        const results = await Promise.all(Array.from({ length: 40 }, () => ledger.redeemToken(code, 'p', T0)));
        expect(results.filter((r) => r.status === 'redeemed')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'already_used')).toHaveLength(39);
      });
    });

    describe('prune', () => {
      it('deletes rows that expired before now, and only those', async () => {
        // Far in the future of every other test's rows, so earlier tests do not interfere.
        const base = T0 + 10 * 365 * 24 * 3600_000;
        await ledger.prune(base); // clear everything the earlier tests left behind
        const old = newJti();
        const edge = newJti();
        const live = newJti();
        await ledger.redeem(request(old, 'd', base + 100, base));
        await ledger.redeem(request(edge, 'd', base + 200, base));
        await ledger.redeem(request(live, 'd', base + 10_000, base));
        await ledger.recordOutcome(live, 'sealed');
        const oldToken = await ledger.mintToken({ purpose: 'p', expiresAt: base + 100, now: base });
        const liveToken = await ledger.mintToken({ purpose: 'p', expiresAt: base + 10_000, now: base });

        expect(await ledger.prune(base + 200)).toBe(2); // `old` and `oldToken`; `edge` expires at now, kept
        expect(await ledger.prune(base + 200)).toBe(0);
        expect(await ledger.redeem(request(live, 'd', base + 10_000, base + 300))).toEqual({
          status: 'retry',
          outcome: 'sealed',
        });
        expect(await ledger.redeemToken(liveToken, 'p', base + 300)).toEqual({ status: 'redeemed', data: undefined });
        expect(await ledger.redeemToken(oldToken, 'p', base + 300)).toEqual({ status: 'unknown' });
        // A pruned jti is still refused: its envelope has expired.
        expect(await ledger.redeem(request(old, 'd', base + 100, base + 300))).toEqual({ status: 'replayed' });
        expect(await ledger.prune(base + 20_000)).toBe(3); // edge, live, liveToken (used tokens go when they expire)
      });
    });

    describe('close', () => {
      it('refuses work after close, and closing twice is fine', async () => {
        const other = await open();
        await other.close();
        await other.close();
        await expect(other.redeem(request(newJti()))).rejects.toThrow(/closed/);
        await expect(other.mintToken({ purpose: 'p', expiresAt: T0 + 1, now: T0 })).rejects.toThrow(/closed/);
      });
    });
  });
}
