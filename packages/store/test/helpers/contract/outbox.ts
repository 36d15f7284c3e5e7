/**
 * The `outbox` facet's contract (schema 8), run against the memory, SQLite
 * and PostgreSQL ledgers: the outbox is written with a park (only when the
 * write wins) or on its own (an id once), handed out once per lease, retried
 * after a failure and never again once delivered, with the traceparent it was written with. Times are explicit and far
 * from the other suites' rows (the store is shared).
 */
import type { FullLedger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, parked, T0 } from './fixtures.js';

/** Run the outbox contract against a ledger made by `open` (one for the suite). */
export function outboxContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, outbox`, () => {
    let ledger: FullLedger;
    // Far from every other test's times; each test moves further on.
    let base = T0 + 6 * 365 * 24 * 3600_000;
    const next = () => {
      base += 10 * 24 * 3600_000;
      return base;
    };
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });
    it('writes the outbox with a park, and only when the write wins', async () => {
      const at = next();
      const id = newId();
      const [m1, m2, lost] = [newId('N'), newId('N'), newId('N')];
      await ledger.requests.parkRequest(
        parked(id, { now: at, outbox: [{ id: m1, type: 'decision.requested', body: '{"a":1}' }] }),
        null,
      );
      const conflict = await ledger.requests.parkRequest(
        parked(id, { now: at, outbox: [{ id: lost, type: 'request.ended', body: '{}' }] }),
        7,
      );
      expect(conflict).toEqual({ status: 'conflict' });
      await ledger.outbox.enqueueOutbox([{ id: m2, type: 'decision.made', body: '{"b":2}' }], at + 1);
      // A second insert of one id is ignored.
      await ledger.outbox.enqueueOutbox([{ id: m1, type: 'decision.requested', body: '{"other":true}' }], at + 2);
      const mine = new Set([m1, m2, lost]);
      const got = (await ledger.outbox.claimOutbox({ now: at + 5, leaseUntil: at + 30_005, limit: 1000 })).filter((m) =>
        mine.has(m.id),
      );
      expect(got).toEqual([
        { id: m1, type: 'decision.requested', body: '{"a":1}', attempts: 0, createdAt: at },
        { id: m2, type: 'decision.made', body: '{"b":2}', attempts: 0, createdAt: at + 1 },
      ]);
      // Leased: not handed out again before the lease ends.
      const again = await ledger.outbox.claimOutbox({ now: at + 10, leaseUntil: at + 30_010, limit: 1000 });
      expect(again.filter((m) => mine.has(m.id))).toEqual([]);
    });

    it('keeps the traceparent of the round that raised a message, with a park or on its own', async () => {
      const at = next();
      const id = newId();
      const [parkedMsg, alone, plain] = [newId('N'), newId('N'), newId('N')];
      const tp1 = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const tp2 = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      await ledger.requests.parkRequest(
        parked(id, { now: at, outbox: [{ id: parkedMsg, type: 'decision.requested', body: '{}', traceparent: tp1 }] }),
        null,
      );
      await ledger.outbox.enqueueOutbox(
        [{ id: alone, type: 'flow.notification', body: '{}', traceparent: tp2 }],
        at + 1,
      );
      await ledger.outbox.enqueueOutbox([{ id: plain, type: 'request.ended', body: '{}' }], at + 2);
      const mine = new Set([parkedMsg, alone, plain]);
      const got = (await ledger.outbox.claimOutbox({ now: at + 5, leaseUntil: at + 30_005, limit: 1000 })).filter((m) =>
        mine.has(m.id),
      );
      expect(got).toEqual([
        { id: parkedMsg, type: 'decision.requested', body: '{}', traceparent: tp1, attempts: 0, createdAt: at },
        { id: alone, type: 'flow.notification', body: '{}', traceparent: tp2, attempts: 0, createdAt: at + 1 },
        { id: plain, type: 'request.ended', body: '{}', attempts: 0, createdAt: at + 2 },
      ]);
      // Without tracing the record has no traceparent key at all.
      expect(got[2]).not.toHaveProperty('traceparent');
    });

    it('retries a failed delivery at its next attempt, and never hands out a delivered one again', async () => {
      const at = next();
      const id = newId('N');
      await ledger.outbox.enqueueOutbox([{ id, type: 'request.ended', body: '{}' }], at);
      const claimAt = async (now: number) =>
        (await ledger.outbox.claimOutbox({ now, leaseUntil: now + 30_000, limit: 1000 })).filter((m) => m.id === id);
      expect(await claimAt(at)).toHaveLength(1);
      await ledger.outbox.settleOutbox({ id, now: at + 1, delivered: false, nextAttemptAt: at + 500 });
      expect(await claimAt(at + 400)).toEqual([]);
      expect((await claimAt(at + 500))[0]?.attempts).toBe(1);
      const stats = await ledger.schedule.schedulerStats(at + 501);
      expect(stats.outboxDepth).toBeGreaterThanOrEqual(1);
      await ledger.outbox.settleOutbox({ id, now: at + 600, delivered: true });
      expect(await claimAt(at + 100_000)).toEqual([]);
    });
  });
}
