/**
 * The quorum part of the Ledger contract (schema 11), run against the memory,
 * SQLite and PostgreSQL ledgers: a vote is a compare-and-set write of its
 * request (the version moves, a stale version is `conflict`), a voter votes
 * once (`already_voted`, checked before `conflict`), the vote that completes
 * the decision records it in the same write (decided, with its display name
 * and channel), a decided decision takes no more votes, of racing voters from
 * one version exactly one wins (also across two handles on one database), the
 * votes read back in the order written (by the version their write made, also
 * within one millisecond), and pruning removes them with their request.
 * A recorded decision keeps its display name and channel.
 */
import type { FullLedger, RecordVote } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionRequest, newId, parked, T0 } from '../fixtures.js';

/** Run the votes contract against ledgers made by `open`; `second` opens another handle on the same database. */
export function votesContract(name: string, open: () => Promise<FullLedger>, second?: () => Promise<FullLedger>): void {
  describe(`${name}: Ledger contract, quorum votes`, () => {
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
    const vote = (
      id: string,
      voter: string,
      expectedVersion: number,
      fields: Partial<RecordVote> = {},
    ): RecordVote => ({
      id,
      key: 'manager_approval',
      voter: `hash-${voter}`,
      voterName: null,
      displayName: null,
      content: `sealed-vote-${voter}`,
      via: 'decide_api',
      now: T0 + 1000,
      expectedVersion,
      ...fields,
    });
    const parkedWithDecision = async () => {
      const id = newId();
      expect(await ledger.requests.parkRequest(parked(id), null)).toEqual({ status: 'parked', version: 1 });
      await ledger.decisions.requestDecisions([decisionRequest(id, 'manager_approval')]);
      return id;
    };

    it('records a vote as a write of its request, once per voter, and completes the decision with the last vote', async () => {
      const id = await parkedWithDecision();
      expect(
        await ledger.decisions.recordVote(vote(id, 'bob', 1, { voterName: 'bob', displayName: 'Bob B.' })),
      ).toEqual({
        status: 'recorded',
        version: 2,
      });
      expect((await ledger.requests.getRequest(id))?.version).toBe(2);
      // The same voter again: refused, whatever version it read.
      expect(await ledger.decisions.recordVote(vote(id, 'bob', 2))).toEqual({ status: 'already_voted' });
      expect(await ledger.decisions.recordVote(vote(id, 'bob', 1))).toEqual({ status: 'already_voted' });
      // Another voter from a stale version: conflict, nothing written.
      expect(await ledger.decisions.recordVote(vote(id, 'dave', 1))).toEqual({ status: 'conflict' });
      expect((await ledger.decisions.listDecisions({ id }))[0]?.status).toBe('pending');
      const decide = {
        decider: 'hash-dave',
        deciderName: null,
        deciderDisplay: null,
        content: 'sealed-decision',
        via: 'decide',
      };
      expect(await ledger.decisions.recordVote(vote(id, 'dave', 2, { via: 'decide', now: T0 + 2000, decide }))).toEqual(
        {
          status: 'recorded',
          version: 3,
        },
      );
      const [decided] = await ledger.decisions.listDecisions({ id });
      expect(decided).toMatchObject({
        status: 'decided',
        decider: 'hash-dave',
        content: 'sealed-decision',
        decidedAt: T0 + 2000,
        via: 'decide',
      });
      expect(await ledger.decisions.listVotes(id)).toEqual([
        {
          id,
          key: 'manager_approval',
          voter: 'hash-bob',
          voterName: 'bob',
          displayName: 'Bob B.',
          content: 'sealed-vote-bob',
          decidedAt: T0 + 1000,
          via: 'decide_api',
          version: 2,
        },
        {
          id,
          key: 'manager_approval',
          voter: 'hash-dave',
          voterName: null,
          displayName: null,
          content: 'sealed-vote-dave',
          decidedAt: T0 + 2000,
          via: 'decide',
          version: 3,
        },
      ]);
      // Decided: no more votes.
      expect(await ledger.decisions.recordVote(vote(id, 'erin', 3))).toEqual({ status: 'already_decided' });
      expect(await ledger.decisions.listVotes(id)).toHaveLength(2);
    });

    it('reads votes back in the order they were written, also within one millisecond', async () => {
      const id = await parkedWithDecision();
      expect((await ledger.decisions.recordVote(vote(id, 'zed', 1))).status).toBe('recorded');
      expect((await ledger.decisions.recordVote(vote(id, 'amy', 2))).status).toBe('recorded');
      expect((await ledger.decisions.listVotes(id)).map((v) => [v.voter, v.version])).toEqual([
        ['hash-zed', 2],
        ['hash-amy', 3],
      ]);
    });

    it('refuses votes on unknown, closed and expired decisions', async () => {
      expect(await ledger.decisions.recordVote(vote(newId(), 'bob', 1))).toEqual({ status: 'unknown' });
      const closed = await parkedWithDecision();
      await ledger.decisions.closeDecisions(closed, T0);
      expect(await ledger.decisions.recordVote(vote(closed, 'bob', 1))).toEqual({ status: 'closed' });
      const late = await parkedWithDecision();
      expect(await ledger.decisions.recordVote(vote(late, 'bob', 1, { now: T0 + 2 * 3600_000 }))).toEqual({
        status: 'expired',
      });
      expect(await ledger.decisions.listVotes(late)).toEqual([]);
    });

    it('lets exactly one of racing voters from one version win', async () => {
      const id = await parkedWithDecision();
      const handles = [ledger, other ?? ledger, ledger, other ?? ledger];
      const results = await Promise.all(handles.map((l, i) => l.decisions.recordVote(vote(id, `voter${i}`, 1))));
      expect(results.filter((r) => r.status === 'recorded')).toHaveLength(1);
      expect(results.filter((r) => r.status === 'conflict')).toHaveLength(3);
      expect(await ledger.decisions.listVotes(id)).toHaveLength(1);
      expect((await ledger.requests.getRequest(id))?.version).toBe(2);
    });

    it('keeps a recorded decision’s display name and channel', async () => {
      const id = await parkedWithDecision();
      const recorded = await ledger.decisions.recordDecision({
        id,
        key: 'manager_approval',
        decider: 'hash-bob',
        deciderName: 'bob',
        deciderDisplay: 'Bob B.',
        via: 'decide_page',
        content: 'sealed',
        now: T0 + 1000,
        expectedVersion: 1,
      });
      expect(recorded).toEqual({ status: 'recorded', version: 2 });
      expect((await ledger.decisions.listDecisions({ id }))[0]).toMatchObject({
        decider: 'hash-bob',
        deciderName: 'bob',
        deciderDisplay: 'Bob B.',
        via: 'decide_page',
      });
    });

    it('prunes votes with their request', async () => {
      const id = newId();
      await ledger.requests.parkRequest(parked(id, { expiresAt: T0 + 5000 }), null);
      await ledger.decisions.requestDecisions([decisionRequest(id, 'manager_approval')]);
      expect((await ledger.decisions.recordVote(vote(id, 'bob', 1))).status).toBe('recorded');
      await ledger.prune(T0 + 10_000);
      expect(await ledger.requests.getRequest(id)).toBeUndefined();
      expect(await ledger.decisions.listVotes(id)).toEqual([]);
    });
  });
}
