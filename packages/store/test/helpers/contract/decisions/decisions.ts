/**
 * The `decisions` facet's contract, decisions proper: requested idempotently
 * with every field intact, listed by request or for a decider (their roles,
 * not their own, not past the deadline), recorded once at their request's
 * version (exactly one of concurrent deciders, or of a decider and a
 * withdrawal, wins), refused when unknown, closed or late, and closed with
 * their request. Votes and delegations have suites of their own beside it.
 */
import type { FullLedger, NewDecision, RecordDecision } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DAY,
  decisionRequest,
  HOUR,
  NOT_DELEGATED,
  newId,
  parked,
  recordDecisionOn,
  requestDecisionsOn,
  T0,
} from '../fixtures.js';

/** Run the decisions contract against a ledger made by `open` (one for the suite). */
export function decisionsContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, decisions`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });
    const requestDecisions = (list: readonly NewDecision[]) => requestDecisionsOn(ledger, list);
    const recordDecision = (decision: Omit<RecordDecision, 'expectedVersion'>) => recordDecisionOn(ledger, decision);

    describe('decisions', () => {
      const pendingFor = (roles: string[], excludeRequester = 'hash-bob', now = T0) => ({
        pendingFor: { roles, excludeRequester, now },
      });
      /** Only this test's rows: other tests' decisions with a null role are pending for anyone. */
      const only = (ids: string[], list: { id: string; key: string }[]) =>
        list.filter((d) => ids.includes(d.id)).map((d) => `${d.id}/${d.key}`);

      it('stores requested decisions as pending, every field intact', async () => {
        const id = newId();
        await requestDecisions([
          decisionRequest(id, 'manager_approval'),
          decisionRequest(id, 'legal', { role: null, deadline: null, message: 'Legal? ✓', requestedAt: T0 + 1 }),
        ]);
        expect(await ledger.decisions.listDecisions({ id })).toEqual([
          {
            ...decisionRequest(id, 'manager_approval'),
            status: 'pending',
            decider: null,
            deciderName: null,
            content: null,
            decidedAt: null,
            ...NOT_DELEGATED,
          },
          {
            ...decisionRequest(id, 'legal', { role: null, deadline: null, message: 'Legal? ✓', requestedAt: T0 + 1 }),
            status: 'pending',
            decider: null,
            deciderName: null,
            content: null,
            decidedAt: null,
            ...NOT_DELEGATED,
          },
        ]);
      });

      it('leaves a decision that exists as it is when requested again, and inserts the new ones', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'bob', content: '{}', now: T0 + 1 }),
        ).toEqual({ status: 'recorded', version: 2 });
        await requestDecisions([
          decisionRequest(id, 'manager_approval', { message: 'changed', requestedAt: T0 + 5 }),
          decisionRequest(id, 'finance_approval', { role: 'finance', requestedAt: T0 + 5 }),
        ]);
        await ledger.decisions.requestDecisions([]);
        const rows = await ledger.decisions.listDecisions({ id });
        expect(rows.map((d) => [d.key, d.status, d.message, d.decider])).toEqual([
          ['manager_approval', 'decided', 'Approve 120 EUR for travel?', 'bob'],
          ['finance_approval', 'pending', 'Approve 120 EUR for travel?', null],
        ]);
      });

      it('inserts many decisions in one call', async () => {
        const id = newId();
        const keys = Array.from({ length: 450 }, (_, i) => `k${String(i).padStart(3, '0')}`);
        await requestDecisions(keys.map((key) => decisionRequest(id, key)));
        await requestDecisions(keys.map((key) => decisionRequest(id, key)));
        expect((await ledger.decisions.listDecisions({ id })).map((d) => d.key)).toEqual(keys);
      });

      it('lists a request’s decisions in any status, by request time then key in code-point order', async () => {
        const id = newId();
        await requestDecisions([
          decisionRequest(id, 'late', { requestedAt: T0 + 10 }),
          decisionRequest(id, 'alpha'),
          decisionRequest(id, 'Zeta'),
          decisionRequest(id, 'beta'),
        ]);
        await recordDecision({ id, key: 'beta', decider: 'bob', content: 'yes', now: T0 + 1 });
        await requestDecisions([decisionRequest(newId(), 'alpha')]);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.status])).toEqual([
          ['Zeta', 'pending'],
          ['alpha', 'pending'],
          ['beta', 'decided'],
          ['late', 'pending'],
        ]);
        await ledger.decisions.closeDecisions(id, T0 + 2);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => d.status)).toEqual([
          'closed',
          'closed',
          'decided',
          'closed',
        ]);
        expect(await ledger.decisions.listDecisions({ id: newId() })).toEqual([]);
      });

      it('lists pending decisions for a decider: their roles or no role, not their own, not past the deadline', async () => {
        const manager = newId('role');
        const finance = newId('role');
        const [a, b, c, d, e, f] = Array.from({ length: 6 }, () => newId());
        const ids = [a!, b!, c!, d!, e!, f!];
        await requestDecisions([
          decisionRequest(a!, 'manager_approval', { role: manager, requestedAt: T0 + 1 }),
          decisionRequest(b!, 'finance_approval', { role: finance, requestedAt: T0 + 2 }),
          decisionRequest(c!, 'anyone', { role: null, requestedAt: T0 + 3 }),
          decisionRequest(d!, 'manager_approval', { role: manager, requester: 'hash-bob', requestedAt: T0 + 4 }),
          decisionRequest(e!, 'manager_approval', { role: manager, deadline: T0 + 100, requestedAt: T0 + 5 }),
          decisionRequest(f!, 'manager_approval', { role: manager, deadline: null, requestedAt: T0 + 6 }),
        ]);
        const list = async (roles: string[], now = T0, exclude = 'hash-bob') =>
          only(ids, await ledger.decisions.listDecisions(pendingFor(roles, exclude, now)));

        expect(await list([manager])).toEqual([
          `${a}/manager_approval`,
          `${c}/anyone`,
          `${e}/manager_approval`,
          `${f}/manager_approval`,
        ]);
        expect(await list([finance, manager])).toEqual([
          `${a}/manager_approval`,
          `${b}/finance_approval`,
          `${c}/anyone`,
          `${e}/manager_approval`,
          `${f}/manager_approval`,
        ]);
        // No matching role: only decisions open to anyone the flow's predicate allows.
        expect(await list([])).toEqual([`${c}/anyone`]);
        expect(await list([newId('role')])).toEqual([`${c}/anyone`]);
        // Someone else as the caller: bob's own request is listed, alice's are not.
        expect(await list([manager], T0, 'hash-alice')).toEqual([`${d}/manager_approval`]);
        // The deadline: listed up to the millisecond before it, not at it.
        expect(await list([manager], T0 + 99)).toContain(`${e}/manager_approval`);
        expect(await list([manager], T0 + 100)).not.toContain(`${e}/manager_approval`);
        // Those due at T0 + HOUR are gone then; the one without a deadline stays.
        expect(await list([manager], T0 + HOUR)).toEqual([`${f}/manager_approval`]);
        expect(await list([manager], T0 + HOUR - 1)).toEqual([
          `${a}/manager_approval`,
          `${c}/anyone`,
          `${f}/manager_approval`,
        ]);

        // Decided and closed decisions are no longer pending for anyone.
        await recordDecision({ id: a!, key: 'manager_approval', decider: 'carol', content: 'ok', now: T0 + 7 });
        await ledger.decisions.closeDecisions(c!, T0 + 7);
        expect(await list([manager])).toEqual([`${e}/manager_approval`, `${f}/manager_approval`]);
        // Both filters at once.
        expect(only(ids, await ledger.decisions.listDecisions({ id: f!, ...pendingFor([manager]) }))).toEqual([
          `${f}/manager_approval`,
        ]);
        expect(only(ids, await ledger.decisions.listDecisions({ id: a!, ...pendingFor([manager]) }))).toEqual([]);
      });

      it('records a decision once: the decider, the content and the time; then already_decided', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        const content = '{"approve":true,"comment":"ok ✓"}';
        expect(await recordDecision({ id, key: 'manager_approval', decider: 'bob', content, now: T0 + 7 })).toEqual({
          status: 'recorded',
          version: 2,
        });
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'carol', content: 'no', now: T0 + 8 }),
        ).toEqual({ status: 'already_decided' });
        // Still already_decided after its deadline: it was decided in time.
        expect(
          await recordDecision({ id, key: 'manager_approval', decider: 'carol', content: 'no', now: T0 + DAY }),
        ).toEqual({ status: 'already_decided' });
        expect(await ledger.decisions.listDecisions({ id })).toEqual([
          {
            ...decisionRequest(id, 'manager_approval'),
            status: 'decided',
            decider: 'bob',
            deciderName: null,
            content,
            decidedAt: T0 + 7,
            ...NOT_DELEGATED,
          },
        ]);
      });

      it('records the readable decider only when given one (names stored), beside the hash', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'a'), decisionRequest(id, 'b')]);
        await recordDecision({ id, key: 'a', decider: 'h-bob', deciderName: 'bob', content: 'c', now: T0 + 1 });
        await recordDecision({ id, key: 'b', decider: 'h-carol', deciderName: null, content: 'c', now: T0 + 1 });
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.decider, d.deciderName])).toEqual([
          ['a', 'h-bob', 'bob'],
          ['b', 'h-carol', null],
        ]);
      });

      it('refuses a decision at and after its deadline, and records one the millisecond before', async () => {
        const late = newId();
        const inTime = newId();
        await requestDecisions([decisionRequest(late, 'm'), decisionRequest(inTime, 'm')]);
        const record = (id: string, now: number) => recordDecision({ id, key: 'm', decider: 'bob', content: 'c', now });
        expect(await record(late, T0 + HOUR)).toEqual({ status: 'expired' });
        expect(await record(late, T0 + 2 * HOUR)).toEqual({ status: 'expired' });
        expect(await record(inTime, T0 + HOUR - 1)).toEqual({ status: 'recorded', version: 2 });
        expect((await ledger.decisions.listDecisions({ id: late }))[0]).toMatchObject({
          status: 'pending',
          decider: null,
        });
        // Closing wins over expiry: the request ended.
        await ledger.decisions.closeDecisions(late, T0 + 2 * HOUR);
        expect(await record(late, T0 + 2 * HOUR)).toEqual({ status: 'closed' });
      });

      it('reports unknown decisions and closed ones', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval', { deadline: null })]);
        const record = (rid: string, key: string) =>
          recordDecision({ id: rid, key, decider: 'bob', content: 'c', now: T0 + 10 * 365 * DAY });
        expect(await record(newId(), 'manager_approval')).toEqual({ status: 'unknown' });
        expect(await record(id, 'finance_approval')).toEqual({ status: 'unknown' });
        expect(await record(id, 'MANAGER_APPROVAL')).toEqual({ status: 'unknown' });
        expect(await ledger.decisions.closeDecisions(id, T0 + 1)).toBe(1);
        expect(await record(id, 'manager_approval')).toEqual({ status: 'closed' });
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({
          status: 'closed',
          decider: null,
          content: null,
        });
      });

      it('records exactly one of many concurrent decisions, and keeps the winner’s answer', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        const results = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            recordDecision({ id, key: 'manager_approval', decider: `d${i}`, content: `c${i}`, now: T0 + i }),
          ),
        );
        expect(results.filter((r) => r.status === 'recorded')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'already_decided')).toHaveLength(29);
        const winner = results.findIndex((r) => r.status === 'recorded');
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({
          decider: `d${winner}`,
          content: `c${winner}`,
          decidedAt: T0 + winner,
        });
      });

      it('records a decision only at its request’s version, bumps that version, and so fails a stale writer', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval'), decisionRequest(id, 'legal')]);
        const decide = (key: string, expectedVersion: number, now = T0 + 5) =>
          ledger.decisions.recordDecision({ id, key, decider: 'bob', content: 'c', now, expectedVersion });
        expect(await decide('manager_approval', 2)).toEqual({ status: 'conflict' });
        expect(await decide('manager_approval', 0)).toEqual({ status: 'conflict' });
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({ status: 'pending', decider: null });
        expect(await decide('manager_approval', 1)).toEqual({ status: 'recorded', version: 2 });
        expect(await ledger.requests.getRequest(id)).toMatchObject({
          version: 2,
          updatedAt: T0 + 5,
          status: 'waiting',
          state: 'sealed-state-1',
        });
        // A writer that read version 1 (a withdrawal, say) lost: its compare-and-set fails.
        expect(await ledger.requests.parkRequest(parked(id, { status: 'withdrawn', now: T0 + 6 }), 1)).toEqual({
          status: 'conflict',
        });
        // Another key from the old version conflicts; from the new one it is recorded.
        expect(await decide('legal', 1)).toEqual({ status: 'conflict' });
        expect(await decide('legal', 2, T0 + 7)).toEqual({ status: 'recorded', version: 3 });
        // Decided (even when asked from a stale version) wins over a conflict.
        expect(await decide('manager_approval', 1)).toEqual({ status: 'already_decided' });
        expect(await decide('manager_approval', 3)).toEqual({ status: 'already_decided' });
      });

      it('refuses a decision once its request ended, before its decisions are closed, and past its deadline', async () => {
        const id = newId();
        await requestDecisions([decisionRequest(id, 'manager_approval')]);
        expect(
          await ledger.requests.parkRequest(parked(id, { status: 'withdrawn', waitingFor: [], now: T0 + 1 }), 1),
        ).toEqual({
          status: 'parked',
          version: 2,
        });
        for (const expectedVersion of [1, 2, 3]) {
          expect(
            await ledger.decisions.recordDecision({
              id,
              key: 'manager_approval',
              decider: 'bob',
              content: 'c',
              now: T0 + 2,
              expectedVersion,
            }),
          ).toEqual({ status: 'closed' });
        }
        expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({ status: 'pending', decider: null });
        expect((await ledger.requests.getRequest(id))?.version).toBe(2);
        // Past its deadline, from a stale version: expired (no retry would help).
        const late = newId();
        await requestDecisions([decisionRequest(late, 'manager_approval')]);
        await ledger.requests.parkRequest(parked(late, { now: T0 + 1 }), 1);
        expect(
          await ledger.decisions.recordDecision({
            id: late,
            key: 'manager_approval',
            decider: 'bob',
            content: 'c',
            now: T0 + HOUR,
            expectedVersion: 1,
          }),
        ).toEqual({ status: 'expired' });
        // A decision whose request is gone (pruned) or was never parked is unknown.
        const orphan = newId();
        await ledger.decisions.requestDecisions([decisionRequest(orphan, 'manager_approval')]);
        expect(
          await ledger.decisions.recordDecision({
            id: orphan,
            key: 'manager_approval',
            decider: 'bob',
            content: 'c',
            now: T0 + 1,
            expectedVersion: 1,
          }),
        ).toEqual({ status: 'unknown' });
      });

      it('of a withdrawal and a decision racing from one version, exactly one wins, every time', async () => {
        const wins = { decision: 0, withdrawal: 0 };
        for (let i = 0; i < 24; i++) {
          const id = newId();
          await requestDecisions([decisionRequest(id, 'manager_approval')]);
          const withdrawal = () =>
            ledger.requests.parkRequest(
              parked(id, { status: 'withdrawn', waitingFor: [], state: 'withdrawn', now: T0 + 1 }),
              1,
            );
          const decision = () =>
            ledger.decisions.recordDecision({
              id,
              key: 'manager_approval',
              decider: 'bob',
              content: 'c',
              now: T0 + 1,
              expectedVersion: 1,
            });
          const [parkedResult, decided] =
            i % 2 === 0
              ? await Promise.all([withdrawal(), decision()])
              : await Promise.all([decision(), withdrawal()]).then(([d, w]) => [w, d] as const);
          const row = await ledger.requests.getRequest(id);
          const [record] = await ledger.decisions.listDecisions({ id });
          expect(row?.version).toBe(2);
          if (parkedResult.status === 'parked') {
            wins.withdrawal++;
            expect(decided).toEqual({ status: 'closed' });
            expect({ status: row?.status, decision: record?.status }).toEqual({
              status: 'withdrawn',
              decision: 'pending',
            });
          } else {
            wins.decision++;
            expect(decided).toEqual({ status: 'recorded', version: 2 });
            expect({ status: row?.status, decision: record?.status }).toEqual({
              status: 'waiting',
              decision: 'decided',
            });
          }
        }
        expect(wins.decision + wins.withdrawal).toBe(24);
      });

      it('closes only the pending decisions of one request, and says how many', async () => {
        const id = newId();
        const other = newId();
        await requestDecisions([
          decisionRequest(id, 'a'),
          decisionRequest(id, 'b'),
          decisionRequest(id, 'c'),
          decisionRequest(other, 'a'),
        ]);
        await recordDecision({ id, key: 'b', decider: 'bob', content: 'yes', now: T0 + 1 });
        expect(await ledger.decisions.closeDecisions(id, T0 + 2)).toBe(2);
        expect(await ledger.decisions.closeDecisions(id, T0 + 3)).toBe(0);
        expect(await ledger.decisions.closeDecisions(newId(), T0 + 3)).toBe(0);
        expect((await ledger.decisions.listDecisions({ id })).map((d) => [d.key, d.status, d.decider])).toEqual([
          ['a', 'closed', null],
          ['b', 'decided', 'bob'],
          ['c', 'closed', null],
        ]);
        expect((await ledger.decisions.listDecisions({ id: other }))[0]?.status).toBe('pending');
      });
    });
  });
}
