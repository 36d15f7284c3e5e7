/**
 * The `runs` facet's contract: what operators read: every requester's runs
 * by flow, status, requester and time, paged by keyset with ties by id, and
 * one instance's durable steps by key.
 */
import type { FullLedger, ParkRequest, RunFilter } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, parked, stepClaim, T0 } from './fixtures.js';

/** Run the runs contract against a ledger made by `open` (one for the suite). */
export function runsContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, runs`, () => {
    let ledger: FullLedger;
    beforeAll(async () => {
      ledger = await open();
    });
    afterAll(async () => {
      await ledger?.close();
    });

    describe('runs', () => {
      it('lists runs for operators by flow, status, requester and time, paged by keyset, ties by id', async () => {
        const flow = newId('flow');
        const p = newId();
        const at = (id: string, now: number, fields: Partial<ParkRequest> = {}) =>
          ledger.requests.parkRequest(parked(`${p}-${id}`, { flow, now, ...fields }), null);
        await at('1', T0 + 10, { requester: 'hash-carol', requesterName: 'carol' });
        await at('a', T0 + 40, { status: 'terminated', waitingFor: [] });
        await at('B', T0 + 40);
        await at('2', T0 + 20);
        await ledger.requests.parkRequest(parked(newId(), { now: T0 + 50 }), null); // another flow
        expect(ledger.runs.listRuns).toBeDefined();
        const ids = async (filter: Partial<RunFilter>) =>
          (await ledger.runs.listRuns({ flow, limit: 10, ...filter })).map((r) => r.id.slice(p.length + 1));
        expect(await ids({})).toEqual(['B', 'a', '2', '1']);
        expect(await ids({ status: 'terminated' })).toEqual(['a']);
        expect(await ids({ requester: 'carol' })).toEqual(['1']);
        expect(await ids({ requester: 'hash-carol' })).toEqual(['1']);
        expect(await ids({ updatedSince: T0 + 20 })).toEqual(['B', 'a', '2']);
        expect(await ids({ createdSince: T0 + 40 })).toEqual(['B', 'a']);
        const first = await ledger.runs.listRuns({ flow, limit: 1 });
        expect(await ids({ limit: 2, after: { updatedAt: first[0]!.updatedAt, id: first[0]!.id } })).toEqual([
          'a',
          '2',
        ]);
        expect(await ids({ after: { updatedAt: T0 + 40, id: `${p}-a` } })).toEqual(['2', '1']);
        expect((await ledger.runs.listRuns({ flow, limit: 10 }))[1]).toMatchObject({
          status: 'terminated',
          version: 1,
        });
      });

      it("lists one instance's steps by key, recorded or running", async () => {
        const id = newId('F');
        await ledger.steps.claimStep(stepClaim(id, 'a', { key: 'ship#0' }));
        await ledger.steps.claimStep(stepClaim(id, 'a'));
        await ledger.steps.claimStep(stepClaim(newId('F'), 'a'));
        await ledger.steps.recordStep({ id, key: 'refund#0', status: 'failed', outcome: 'sealed-error', now: T0 + 5 });
        expect(ledger.runs.listSteps).toBeDefined();
        const steps = await ledger.runs.listSteps(id);
        expect(steps.map((s) => [s.key, s.status, s.recordedAt])).toEqual([
          ['refund#0', 'failed', T0 + 5],
          ['ship#0', 'running', null],
        ]);
        expect(await ledger.runs.listSteps(newId('F'))).toEqual([]);
      });
    });
  });
}
