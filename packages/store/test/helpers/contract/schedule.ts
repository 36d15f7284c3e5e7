/**
 * The `schedule` facet's contract (schema 8), run against the memory, SQLite
 * and PostgreSQL ledgers: parked requests carry their next due timer; claims
 * of due requests go to one claimant under a lease (of two racing on one
 * database too), are taken over once the lease ended, and end with the
 * request's next write; due requests, the outbox and the decisions waiting are counted. Times are
 * explicit and far from the other suites' rows (the store is shared).
 */
import type { FullLedger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionRequest, newId, parked, recordDecisionOn, requestDecisionsOn, T0 } from './fixtures.js';

/** Run the schedule contract against ledgers made by `open`; `second` opens another handle on the same database. */
export function scheduleContract(
  name: string,
  open: () => Promise<FullLedger>,
  second?: () => Promise<FullLedger>,
): void {
  describe(`${name}: Ledger contract, schedule`, () => {
    let ledger: FullLedger;
    let other: FullLedger | undefined;
    // Far from every other test's times; each test moves further on.
    let base = T0 + 5 * 365 * 24 * 3600_000;
    const next = () => {
      base += 10 * 24 * 3600_000;
      return base;
    };
    beforeAll(async () => {
      ledger = await open();
      other = second ? await second() : undefined;
    });
    afterAll(async () => {
      await other?.close();
      await ledger?.close();
    });
    const claim = (l: FullLedger, now: number, owner = 'A', lease = 30_000) =>
      l.schedule.claimDueRequests({ owner, now, leaseUntil: now + lease, limit: 1000 });

    it('keeps a waiting request’s due time, and none once it ended', async () => {
      const at = next();
      const id = newId();
      await ledger.requests.parkRequest(parked(id, { now: at, dueAt: at + 5000 }), null);
      expect((await ledger.requests.getRequest(id))?.dueAt).toBe(at + 5000);
      await ledger.requests.parkRequest(parked(id, { now: at, status: 'expired', dueAt: at + 5000 }), 1);
      expect((await ledger.requests.getRequest(id))?.dueAt).toBeNull();
    });

    it('claims due requests once, earliest first, and not those due later or ended', async () => {
      const at = next();
      const [a, b, later, ended] = [newId(), newId(), newId(), newId()];
      await ledger.requests.parkRequest(parked(b, { now: at, dueAt: at + 200 }), null);
      await ledger.requests.parkRequest(parked(a, { now: at, dueAt: at + 100 }), null);
      await ledger.requests.parkRequest(parked(later, { now: at, dueAt: at + 10_000 }), null);
      await ledger.requests.parkRequest(parked(ended, { now: at, status: 'completed', dueAt: at + 100 }), null);
      const mine = new Set([a, b, later, ended]);
      const first = (await claim(ledger, at + 500)).filter((d) => mine.has(d.id));
      expect(first).toEqual([
        { id: a, flow: 'expense_approval', dueAt: at + 100, version: 1 },
        { id: b, flow: 'expense_approval', dueAt: at + 200, version: 1 },
      ]);
      // Held under the lease: nobody else gets them.
      expect((await claim(ledger, at + 600, 'B')).filter((d) => mine.has(d.id))).toEqual([]);
    });

    it('lets another claimant take a request over once the lease ended', async () => {
      const at = next();
      const id = newId();
      await ledger.requests.parkRequest(parked(id, { now: at, dueAt: at }), null);
      expect((await claim(ledger, at, 'A', 1000)).map((d) => d.id)).toContain(id);
      expect((await claim(ledger, at + 999, 'B')).map((d) => d.id)).not.toContain(id);
      expect((await claim(ledger, at + 1001, 'B')).map((d) => d.id)).toContain(id);
    });

    it('ends a claim with the request’s next write, which sets the next due time', async () => {
      const at = next();
      const id = newId();
      await ledger.requests.parkRequest(parked(id, { now: at, dueAt: at }), null);
      expect((await claim(ledger, at)).map((d) => d.id)).toContain(id);
      await ledger.requests.parkRequest(parked(id, { now: at + 10, dueAt: at + 50 }), 1);
      expect((await claim(ledger, at + 20, 'B')).map((d) => d.id)).not.toContain(id);
      expect((await claim(ledger, at + 60, 'B')).filter((d) => d.id === id)).toEqual([
        { id, flow: 'expense_approval', dueAt: at + 50, version: 2 },
      ]);
    });

    it('counts due requests and the outbox', async () => {
      const at = next();
      const id = newId();
      const before = await ledger.schedule.schedulerStats(at + 100);
      await ledger.requests.parkRequest(parked(id, { now: at, dueAt: at + 50 }), null);
      const after = await ledger.schedule.schedulerStats(at + 100);
      expect(after.due).toBe(before.due + 1);
      expect(typeof after.outboxDepth).toBe('number');
    });

    it('counts the decisions waiting: requested, not made yet', async () => {
      const id = newId();
      const before = (await ledger.schedule.schedulerStats(next())).decisionsWaiting!;
      await requestDecisionsOn(ledger, [decisionRequest(id, 'first'), decisionRequest(id, 'second')]);
      expect((await ledger.schedule.schedulerStats(next())).decisionsWaiting).toBe(before + 2);
      await recordDecisionOn(ledger, { id, key: 'first', decider: 'hash-bob', content: '{}', now: T0 + 1 });
      expect((await ledger.schedule.schedulerStats(next())).decisionsWaiting).toBe(before + 1);
    });

    it.runIf(second !== undefined)(
      'gives each due request to one of two claimants racing on one database',
      async () => {
        const at = next();
        const ids = Array.from({ length: 40 }, () => newId());
        for (const id of ids) await ledger.requests.parkRequest(parked(id, { now: at, dueAt: at }), null);
        const mine = new Set(ids);
        const rounds = await Promise.all(
          Array.from({ length: 8 }, (_, i) => claim(i % 2 === 0 ? ledger : other!, at + 1, `owner-${i}`)),
        );
        const got = rounds.flat().filter((d) => mine.has(d.id));
        expect(got.map((d) => d.id).sort()).toEqual([...ids].sort());
      },
    );
  });
}
