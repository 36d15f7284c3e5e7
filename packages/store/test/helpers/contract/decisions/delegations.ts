/**
 * The delegation part of the Ledger contract (schema 12), run against the
 * memory, SQLite and PostgreSQL ledgers: a hand-over of a pending decision is
 * one compare-and-set on its request's version (of two racing from one
 * version exactly one is written, and a stale version is a conflict), it is
 * found by assignee, and a decision recorded after it keeps on whose behalf
 * and leaves the assignee; absence delegates are listed by delegate and by
 * the time they are in force, newest first, and a removal marks them once.
 */
import type { FullLedger, HandOver, NewDelegation } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionRequest, newId, parked, T0 } from '../fixtures.js';

/** Run the delegation contract against ledgers made by `open`. */
export function delegationContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, delegation`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => ledger?.close());
    const handover = (to: string, fields: Partial<HandOver> = {}): HandOver => ({
      to,
      toName: null,
      by: 'hash-bob',
      byName: null,
      onBehalfOf: 'hash-bob',
      onBehalfOfName: null,
      authority: 'sealed-authority',
      reason: 'on leave',
      at: T0 + 1,
      ...fields,
    });

    it('hands a pending decision over once per version, finds it by assignee, and records it on behalf', async () => {
      const id = newId();
      await ledger.requests.parkRequest(parked(id), null);
      await ledger.decisions.requestDecisions([decisionRequest(id, 'manager_approval')]);
      const dave = newId('hash-dave');
      const both = await Promise.all([
        ledger.decisions.handDecision({
          id,
          key: 'manager_approval',
          handover: handover(dave),
          now: T0 + 1,
          expectedVersion: 1,
        }),
        ledger.decisions.handDecision({
          id,
          key: 'manager_approval',
          handover: handover('hash-erin'),
          now: T0 + 1,
          expectedVersion: 1,
        }),
      ]);
      expect(both.map((r) => r.status).sort()).toEqual(['conflict', 'handed']);
      const winner = both[0]!.status === 'handed' ? dave : 'hash-erin';
      expect((await ledger.requests.getRequest(id))?.version).toBe(2);
      const [record] = await ledger.decisions.listDecisions({ id });
      expect(record?.assignee).toBe(winner);
      expect(record?.handover).toEqual(handover(winner));
      const handed = await ledger.decisions.listDecisions({ handedTo: { assignee: winner, now: T0 + 2 } });
      expect(handed.map((r) => r.id)).toEqual([id]);
      // Past its deadline it is no longer listed, and a stale version is a conflict.
      expect(await ledger.decisions.listDecisions({ handedTo: { assignee: winner, now: T0 + 3600_000 } })).toEqual([]);
      expect(
        (
          await ledger.decisions.handDecision({
            id,
            key: 'manager_approval',
            handover: handover(dave),
            now: T0 + 2,
            expectedVersion: 1,
          })
        ).status,
      ).toBe('conflict');
      const recorded = await ledger.decisions.recordDecision({
        id,
        key: 'manager_approval',
        decider: winner,
        content: 'sealed',
        onBehalfOf: 'hash-bob',
        onBehalfOfName: null,
        now: T0 + 3,
        expectedVersion: 2,
      });
      expect(recorded).toEqual({ status: 'recorded', version: 3 });
      const [decided] = await ledger.decisions.listDecisions({ id });
      expect(decided).toMatchObject({ status: 'decided', decider: winner, onBehalfOf: 'hash-bob', assignee: null });
      expect(await ledger.decisions.listDecisions({ handedTo: { assignee: winner, now: T0 + 4 } })).toEqual([]);
      expect(
        (
          await ledger.decisions.handDecision({
            id,
            key: 'manager_approval',
            handover: handover(dave),
            now: T0 + 4,
            expectedVersion: 3,
          })
        ).status,
      ).toBe('already_decided');
      expect(
        (
          await ledger.decisions.handDecision({
            id: newId(),
            key: 'x',
            handover: handover(dave),
            now: T0,
            expectedVersion: 1,
          })
        ).status,
      ).toBe('unknown');
    });

    it('lists absence delegates by delegate and time in force, and removes one once', async () => {
      const erin = newId('hash-erin');
      const absence = (fields: Partial<NewDelegation> = {}): NewDelegation => ({
        id: newId('D'),
        principal: 'hash-bob',
        principalName: null,
        delegate: erin,
        delegateName: null,
        roles: ['manager'],
        authority: 'sealed-authority',
        startsAt: T0,
        endsAt: T0 + 1000,
        reason: 'holiday',
        setBy: 'hash-ops',
        setByName: null,
        createdAt: T0,
        ...fields,
      });
      const first = absence();
      const later = absence({
        startsAt: T0 + 2000,
        endsAt: T0 + 3000,
        createdAt: T0 + 1,
        roles: ['manager', 'finance'],
      });
      await ledger.decisions.setDelegation(first);
      await ledger.decisions.setDelegation(later);
      await ledger.decisions.setDelegation(first); // a second insert of one id is ignored
      const all = await ledger.decisions.listDelegations({ delegate: erin });
      expect(all.map((d) => d.id)).toEqual([later.id, first.id]);
      expect(all[0]).toEqual({ ...later, removedAt: null, removedReason: null, removedBy: null, removedByName: null });
      expect((await ledger.decisions.listDelegations({ delegate: erin, activeAt: T0 + 500 })).map((d) => d.id)).toEqual(
        [first.id],
      );
      expect(await ledger.decisions.listDelegations({ delegate: erin, activeAt: T0 + 1000 })).toEqual([]);
      expect(
        (await ledger.decisions.listDelegations({ delegate: erin, activeAt: T0 + 2000 })).map((d) => d.id),
      ).toEqual([later.id]);
      const removal = { id: later.id, now: T0 + 2500, reason: 'back early', by: 'hash-ops', byName: null };
      expect(await ledger.decisions.removeDelegation(removal)).toBe(true);
      expect(await ledger.decisions.removeDelegation(removal)).toBe(false);
      expect(await ledger.decisions.listDelegations({ delegate: erin, activeAt: T0 + 2600 })).toEqual([]);
      const [removed] = (await ledger.decisions.listDelegations({})).filter((d) => d.id === later.id);
      expect(removed).toMatchObject({ removedAt: T0 + 2500, removedReason: 'back early', removedBy: 'hash-ops' });
    });
  });
}
