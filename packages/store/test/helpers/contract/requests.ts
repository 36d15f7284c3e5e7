/**
 * The `requests` facet's contract: parked requests created at version 1 with
 * every field read back, rewritten only from the version they hold (exactly
 * one of many concurrent writers wins), unknown ids, and a requester's
 * listing, newest first.
 */
import { randomBytes } from 'node:crypto';
import type { FullLedger } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, newId, parked, T0 } from './fixtures.js';

/** Run the requests contract against a ledger made by `open` (one for the suite). */
export function requestsContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, requests`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });

    describe('parked requests', () => {
      it('creates a request at version 1 and reads back every field', async () => {
        const id = newId();
        const state = `${randomBytes(64 * 1024).toString('base64url')}ü€`;
        const request = parked(id, {
          state,
          waitingFor: [{ key: 'manager_approval', role: 'manager' }, { key: 'legal_review' }],
          now: T0 + 5,
        });
        expect(await ledger.requests.parkRequest(request, null)).toEqual({ status: 'parked', version: 1 });
        expect(await ledger.requests.getRequest(id)).toEqual({
          id,
          flow: 'expense_approval',
          requester: 'hash-alice',
          requesterName: null,
          status: 'waiting',
          waitingFor: [{ key: 'manager_approval', role: 'manager' }, { key: 'legal_review' }],
          state,
          version: 1,
          createdAt: T0 + 5,
          updatedAt: T0 + 5,
          expiresAt: T0 + 30 * DAY,
          dueAt: null,
        });
      });

      it('keeps the readable requester name only when given', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id, { requesterName: 'alice@example.com' }), null);
        expect((await ledger.requests.getRequest(id))?.requesterName).toBe('alice@example.com');
      });

      it('refuses to create an id that exists, and leaves the row as it was', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id), null);
        expect(await ledger.requests.parkRequest(parked(id, { state: 'other', now: T0 + 1 }), null)).toEqual({
          status: 'conflict',
        });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          state: 'sealed-state-1',
          version: 1,
          updatedAt: T0,
        });
      });

      it('rewrites a request only from the version it holds, bumping the version each time', async () => {
        const id = newId();
        await ledger.requests.parkRequest(parked(id), null);
        const next = parked(id, {
          status: 'completed',
          waitingFor: [],
          state: 'sealed-state-2',
          requesterName: 'alice',
          now: T0 + 1000,
          expiresAt: T0 + 60 * DAY,
        });
        expect(await ledger.requests.parkRequest(next, 1)).toEqual({ status: 'parked', version: 2 });
        expect(await ledger.requests.getRequest(id)).toEqual({
          id,
          flow: 'expense_approval',
          requester: 'hash-alice',
          requesterName: 'alice',
          status: 'completed',
          waitingFor: [],
          state: 'sealed-state-2',
          version: 2,
          createdAt: T0,
          updatedAt: T0 + 1000,
          expiresAt: T0 + 60 * DAY,
          dueAt: null,
        });
        // A writer that read version 1 lost: it must read again.
        expect(await ledger.requests.parkRequest(parked(id, { state: 'stale' }), 1)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.parkRequest(parked(id, { state: 'ahead' }), 3)).toEqual({ status: 'conflict' });
        expect((await ledger.requests.getRequest(id))?.state).toBe('sealed-state-2');
        expect(await ledger.requests.parkRequest(parked(id, { state: 'sealed-state-3', now: T0 + 2000 }), 2)).toEqual({
          status: 'parked',
          version: 3,
        });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          state: 'sealed-state-3',
          version: 3,
          createdAt: T0,
        });
      });

      it('reports a conflict for an update of an id it does not hold, and creates nothing', async () => {
        const id = newId();
        expect(await ledger.requests.parkRequest(parked(id), 1)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.parkRequest(parked(id), 0)).toEqual({ status: 'conflict' });
        expect(await ledger.requests.getRequest(id)).toBeUndefined();
      });

      it('lets exactly one of many concurrent writers from one version win', async () => {
        const id = newId();
        const creates = await Promise.all(
          Array.from({ length: 20 }, (_, i) => ledger.requests.parkRequest(parked(id, { state: `create-${i}` }), null)),
        );
        expect(creates.filter((r) => r.status === 'parked')).toEqual([{ status: 'parked', version: 1 }]);
        const winner = creates.findIndex((r) => r.status === 'parked');
        expect((await ledger.requests.getRequest(id))?.state).toBe(`create-${winner}`);

        const updates = await Promise.all(
          Array.from({ length: 20 }, (_, i) => ledger.requests.parkRequest(parked(id, { state: `update-${i}` }), 1)),
        );
        expect(updates.filter((r) => r.status === 'parked')).toEqual([{ status: 'parked', version: 2 }]);
        expect(updates.filter((r) => r.status === 'conflict')).toHaveLength(19);
        const updated = updates.findIndex((r) => r.status === 'parked');
        expect(await ledger.requests.getRequest(id)).toMatchObject({ state: `update-${updated}`, version: 2 });
      });

      it('answers undefined for an unknown id', async () => {
        expect(await ledger.requests.getRequest(newId())).toBeUndefined();
        expect(await ledger.requests.getRequest('')).toBeUndefined();
      });

      it("lists a requester's requests updated since a time, newest first, ties by id", async () => {
        const requester = newId('hash');
        const p = newId();
        await ledger.requests.parkRequest(parked(`${p}-1`, { requester, now: T0 + 10 }), null);
        await ledger.requests.parkRequest(parked(`${p}-3`, { requester, now: T0 + 30 }), null);
        await ledger.requests.parkRequest(parked(`${p}-2`, { requester, now: T0 + 20 }), null);
        // Same time: ordered by id in code-point order ("B" before "a"), whatever the insertion order.
        await ledger.requests.parkRequest(parked(`${p}-a`, { requester, now: T0 + 40 }), null);
        await ledger.requests.parkRequest(parked(`${p}-B`, { requester, now: T0 + 40 }), null);
        await ledger.requests.parkRequest(parked(newId(), { requester: newId('hash'), now: T0 + 50 }), null);

        const ids = async (since: number) => (await ledger.requests.listRequests(requester, since)).map((r) => r.id);
        expect(await ids(T0)).toEqual([`${p}-B`, `${p}-a`, `${p}-3`, `${p}-2`, `${p}-1`]);
        expect(await ids(T0 + 20)).toEqual([`${p}-B`, `${p}-a`, `${p}-3`, `${p}-2`]); // since is inclusive
        expect(await ids(T0 + 41)).toEqual([]);

        // A rewrite moves a request to the top.
        await ledger.requests.parkRequest(parked(`${p}-1`, { requester, status: 'completed', now: T0 + 100 }), 1);
        expect(await ids(T0 + 30)).toEqual([`${p}-1`, `${p}-B`, `${p}-a`, `${p}-3`]);
        expect((await ledger.requests.listRequests(requester, T0 + 100))[0]).toMatchObject({
          id: `${p}-1`,
          status: 'completed',
          version: 2,
        });
        expect(await ledger.requests.listRequests(newId('hash'), 0)).toEqual([]);
      });
    });
  });
}
