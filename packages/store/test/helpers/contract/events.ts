/**
 * The events part of the Ledger contract (schema 9), run against the memory,
 * SQLite and PostgreSQL ledgers: a parked request's event waits are replaced
 * with each write and gone once it stops waiting (a stale waiter is never
 * found), the waiters of (event, key) are found by key and paged; a received
 * event is recorded once per (event, id), also when two handles race, with
 * its delivery count once settled; the lookback reads only events whose
 * window is open, oldest first; pruning removes expired events. Concurrent
 * sends (which the PostgreSQL driver batches into one statement each) get
 * their own answers, and a waiter that comes with its request row carries
 * the row `getRequest` reads.
 */
import type { FullLedger, NewEvent } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, parked, T0 } from './fixtures.js';

/** Run the events contract against ledgers made by `open`; `second` opens another handle on the same database. */
export function eventsContract(
  name: string,
  open: () => Promise<FullLedger>,
  second?: () => Promise<FullLedger>,
): void {
  describe(`${name}: Ledger contract, events`, () => {
    let ledger: FullLedger;
    let other: FullLedger | undefined;
    let base = T0 + 7 * 365 * 24 * 3600_000;
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
    const waiters = async (l: FullLedger, event: string, match: string) =>
      (await l.events.eventWaiters({ event, match, limit: 1000 })).map((w) => w.id).sort();
    const received = (fields: Partial<NewEvent> & { id: string; match: string; now: number }): NewEvent => ({
      event: 'ci.finished',
      data: 'sealed-data',
      lookbackUntil: fields.now + 60_000,
      expiresAt: fields.now + 24 * 3600_000,
      ...fields,
    });

    it('finds a waiting request by event and key, replaces its waits on each write, and drops them once it stops waiting', async () => {
      const at = next();
      const key = newId('sha');
      const [a, b] = [newId(), newId()];
      const waits = [{ event: 'ci.finished', match: key }];
      await ledger.requests.parkRequest(parked(a, { now: at, events: waits }), null);
      await ledger.requests.parkRequest(parked(b, { now: at, events: waits }), null);
      expect(await waiters(ledger, 'ci.finished', key)).toEqual([a, b].sort());
      expect(await waiters(ledger, 'ci.finished', `${key}-other`)).toEqual([]);
      expect(await waiters(ledger, 'deploy.done', key)).toEqual([]);
      // A rewrite with another key moves the wait; one without events ends it.
      await ledger.requests.parkRequest(
        parked(a, { now: at, events: [{ event: 'ci.finished', match: `${key}-2` }] }),
        1,
      );
      expect(await waiters(ledger, 'ci.finished', key)).toEqual([b]);
      expect(await waiters(ledger, 'ci.finished', `${key}-2`)).toEqual([a]);
      await ledger.requests.parkRequest(parked(a, { now: at }), 2);
      expect(await waiters(ledger, 'ci.finished', `${key}-2`)).toEqual([]);
      // A write that ends the request (a timeout fired) leaves no waiter behind, whatever it carries.
      await ledger.requests.parkRequest(parked(b, { now: at, status: 'expired', events: waits }), 1);
      expect(await waiters(ledger, 'ci.finished', key)).toEqual([]);
      // A conflicting write changes nothing.
      await ledger.requests.parkRequest(parked(a, { now: at, events: waits }), 3);
      expect(await ledger.requests.parkRequest(parked(a, { now: at }), 3)).toEqual({ status: 'conflict' });
      expect(await waiters(ledger, 'ci.finished', key)).toEqual([a]);
      expect((await ledger.requests.getRequest(a))?.flow).toBe('expense_approval');
    });

    it('pages the waiters of one key in id order', async () => {
      const at = next();
      const key = newId('sha');
      const ids = Array.from({ length: 5 }, () => newId());
      for (const id of ids)
        await ledger.requests.parkRequest(
          parked(id, { now: at, events: [{ event: 'ci.finished', match: key }] }),
          null,
        );
      const first = await ledger.events.eventWaiters({ event: 'ci.finished', match: key, limit: 3 });
      const rest = await ledger.events.eventWaiters({
        event: 'ci.finished',
        match: key,
        limit: 3,
        after: first.at(-1)!.id,
      });
      expect([...first, ...rest].map((w) => w.id)).toEqual([...ids].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
      expect(first[0]!.flow).toBe('expense_approval');
    });

    it('records an event once per (event, id), also when two handles race, and answers duplicates with the settled count', async () => {
      const at = next();
      const id = newId('evt');
      const key = newId('sha');
      const both = await Promise.all(
        [ledger, other ?? ledger, ledger, other ?? ledger].map((l) =>
          l.events.recordEvent(received({ id, match: key, now: at })),
        ),
      );
      expect(both.filter((r) => r.status === 'recorded')).toHaveLength(1);
      expect(both.filter((r) => r.status === 'duplicate')).toEqual(
        Array(3).fill({ status: 'duplicate', delivered: null, receivedAt: at }),
      );
      expect(await ledger.events.getEvent('ci.finished', id)).toEqual({ delivered: null, receivedAt: at });
      await ledger.events.settleEvent('ci.finished', id, 2);
      expect(await ledger.events.recordEvent(received({ id, match: key, now: at + 5 }))).toEqual({
        status: 'duplicate',
        delivered: 2,
        receivedAt: at,
      });
      // The same id under another event name is another event.
      expect(await ledger.events.recordEvent(received({ id, match: key, now: at, event: 'deploy.done' }))).toEqual({
        status: 'recorded',
      });
      expect(await ledger.events.getEvent('ci.finished', newId('evt'))).toBeUndefined();
    });

    it('answers concurrent sends each with its own record, waiters and count (drivers that batch them), a waiter with its request row when it gives one', async () => {
      const at = next();
      const keys = Array.from({ length: 40 }, () => newId('sha'));
      const ids = keys.map(() => newId());
      await Promise.all(
        ids.map((id, i) =>
          ledger.requests.parkRequest(
            parked(id, { now: at, events: [{ event: 'ci.finished', match: keys[i]! }] }),
            null,
          ),
        ),
      );
      const evt = keys.map(() => newId('evt'));
      // Each event asked for twice at once: one recorded, one duplicate, whatever the batching.
      const recorded = await Promise.all(
        [...keys, ...keys].map((key, i) =>
          (i % 2 === 0 ? ledger : (other ?? ledger)).events.recordEvent(
            received({ id: evt[i % keys.length]!, match: key, now: at }),
          ),
        ),
      );
      for (let i = 0; i < keys.length; i++) {
        expect([recorded[i]!.status, recorded[i + keys.length]!.status].sort()).toEqual(['duplicate', 'recorded']);
      }
      const found = await Promise.all(
        keys.map((key) => ledger.events.eventWaiters({ event: 'ci.finished', match: key, limit: 10 })),
      );
      for (const [i, list] of found.entries()) {
        expect(list.map((w) => w.id)).toEqual([ids[i]]);
        const request = list[0]!.request;
        if (request !== undefined) expect(request).toEqual(await ledger.requests.getRequest(ids[i]!));
      }
      await Promise.all(keys.map((_, i) => ledger.events.settleEvent('ci.finished', evt[i]!, i)));
      for (let i = 0; i < keys.length; i++) {
        expect(await ledger.events.getEvent('ci.finished', evt[i]!)).toEqual({ delivered: i, receivedAt: at });
      }
    });

    it('reads the events of a key whose lookback window is open, oldest first, and prunes expired ones', async () => {
      const at = next();
      const key = newId('sha');
      const [old, early, late] = [newId('evt'), newId('evt'), newId('evt')];
      await ledger.events.recordEvent(
        received({ id: old, match: key, now: at, lookbackUntil: at + 100, expiresAt: at + 1000 }),
      );
      await ledger.events.recordEvent(received({ id: late, match: key, now: at + 20, data: 'late-data' }));
      await ledger.events.recordEvent(received({ id: early, match: key, now: at + 10 }));
      await ledger.events.recordEvent(received({ id: newId('evt'), match: `${key}-other`, now: at + 10 }));
      const recent = await ledger.events.recentEvents({ event: 'ci.finished', match: key, now: at + 500, limit: 10 });
      expect(recent).toEqual([
        { event: 'ci.finished', id: early, match: key, data: 'sealed-data', receivedAt: at + 10 },
        { event: 'ci.finished', id: late, match: key, data: 'late-data', receivedAt: at + 20 },
      ]);
      expect(
        (await ledger.events.recentEvents({ event: 'ci.finished', match: key, now: at + 50, limit: 1 })).map(
          (e) => e.id,
        ),
      ).toEqual([old]);
      expect(await ledger.prune(at + 2000)).toBeGreaterThanOrEqual(1);
      expect(await ledger.events.getEvent('ci.finished', old)).toBeUndefined();
      expect(await ledger.events.getEvent('ci.finished', early)).toEqual({ delivered: null, receivedAt: at + 10 });
    });
  });
}
