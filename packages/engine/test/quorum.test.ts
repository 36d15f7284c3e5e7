/**
 * Quorum decisions at the engine level (issue 27 items 4 and 6): two distinct
 * principals with the role must approve, each a vote written with one
 * compare-and-set; the same person twice counts once (`already_voted`), four
 * eyes holds for each vote, one rejection ends it unless `rejectWhen` says
 * otherwise, the machine receives one event with every vote, the inbox and
 * `describeDecision` say how many approvals are still needed, `decision.made`
 * is announced once, and the audit trail keeps who voted, when and through
 * which channel. Real runner, the memory ledger and a real SQLite file, the
 * testing kit for the announcements; a ledger without votes is refused at
 * `createRunner`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { boardMajority, boardSpend } from '../../../test/fixtures/quorum-flows/index.js';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecisionCaller,
  decision,
  FlowDefinitionError,
  type FullLedger,
  generateKey,
  type RoundOutcome,
  type RunnerOptions,
} from '../src/index.js';
import { createFlowTester } from '../src/testing/index.js';

const keys = [generateKey()];
const START = Date.UTC(2026, 11, 2, 9, 0, 0);
let clock = START;
const now = () => clock;

const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'board_spend', roles: ['board'] };
const bob: DecisionCaller = { principal: 'bob', roles: ['board'], displayName: 'Bob Builder' };
const dave: DecisionCaller = { principal: 'dave', roles: ['board'] };
const erin: DecisionCaller = { principal: 'erin', roles: ['board'] };
const carol: DecisionCaller = { principal: 'carol', roles: ['finance'] };

const dir = mkdtempSync(join(tmpdir(), 'baton-quorum-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger(),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};

const text = (outcome: RoundOutcome | { message: string }) => {
  if ('message' in outcome && !('type' in outcome)) return outcome.message;
  const o = outcome as RoundOutcome;
  if (o.type === 'error') return `ERROR ${o.message}`;
  if (o.type !== 'complete') throw new Error(`expected complete, got ${JSON.stringify(o)}`);
  return o.result.content.map((c) => (c as { text: string }).text).join('');
};

describe.each(Object.keys(LEDGERS))('quorum decisions on the %s ledger', (kind) => {
  let ledger: FullLedger;
  beforeEach(() => {
    clock = START;
    ledger = LEDGERS[kind]!();
  });
  afterEach(() => ledger.close());

  const makeRunner = (extra: Partial<RunnerOptions> = {}) =>
    createRunner({
      flows: [boardSpend, boardMajority],
      codec: createRequestStateCodec({ keys, now }),
      now,
      ledger,
      holdMs: 5,
      pollMs: 1,
      waitInCallSeconds: 0,
      ...extra,
    });
  type TestRunner = ReturnType<typeof makeRunner>;

  async function request(runner: TestRunner, flow = 'board_spend', amount = 900) {
    const first = await runner.run({ flow, args: { amount }, context: { ...alice, target: flow } });
    expect(first.type === 'input_required' || first.type === 'complete').toBe(true);
    return first.fid;
  }
  /** A one-shot answer, as the HTTP decision API gives it. */
  const vote = (runner: TestRunner, id: string, who: DecisionCaller, approve: boolean, comment?: string) =>
    runner.answerDecision({
      id,
      context: who,
      answer: { action: 'accept', content: { approve, ...(comment ? { comment } : {}) } },
      channel: 'api',
    });
  const ended = async (id: string) => {
    const row = await ledger.requests.getRequest(id);
    return row?.status;
  };

  it('needs two distinct approvals: the same person twice counts once, and the flow advances once', async () => {
    const audit = createMemoryAuditLog();
    const codec = createRequestStateCodec({ keys, now });
    const runner = makeRunner({ audit, codec, storePrincipalNames: true });
    const id = await request(runner);

    // Both board members see it, with two approvals needed; the requester (also on the board) does not.
    expect((await runner.inbox(bob)).map((i) => [i.id, i.quorum])).toEqual([
      [id, { required: 2, approvals: 0, needed: 2, votes: [] }],
    ]);
    expect(await runner.inbox({ principal: 'alice', roles: ['board'] })).toEqual([]);
    expect(await runner.inbox(carol)).toEqual([]);

    clock += 1000;
    const first = await vote(runner, id, bob, true, 'fine by me');
    expect(first).toMatchObject({ status: 'recorded' });
    expect(text(first as { message: string })).toMatch(
      /Your vote on "board_approval" is recorded; 1 more approval is needed/,
    );
    expect(await ended(id)).toBe('waiting');

    // Bob no longer sees it as his to make; his second answer is refused, and nothing is written.
    expect(await runner.inbox(bob)).toEqual([]);
    const version = (await ledger.requests.getRequest(id))!.version;
    const again = await vote(runner, id, bob, true);
    expect(again).toMatchObject({ status: 'refused', reason: 'already_voted' });
    expect(text(again as { message: string })).toMatch(/already voted .* a person counts once/);
    const viaTool = await runner.decide({ id, context: bob });
    expect(viaTool).toMatchObject({ type: 'error', message: expect.stringMatching(/already voted/) });
    expect((await ledger.requests.getRequest(id))!.version).toBe(version);
    expect(await ledger.decisions.listVotes(id)).toHaveLength(1);

    // Dave sees one approval (by Bob, named: names are stored) and one still needed.
    const [item] = await runner.inbox(dave);
    expect(item?.quorum).toEqual({
      required: 2,
      approvals: 1,
      needed: 1,
      votes: [{ decider: 'Bob Builder', approves: true, you: false, decidedAt: START + 1000 }],
    });
    const described = await runner.describeDecision({ id, context: dave });
    expect(described).toMatchObject({ status: 'pending', decision: { quorum: { approvals: 1, needed: 1 } } });
    // Four eyes holds for every vote.
    expect(await vote(runner, id, { principal: 'alice', roles: ['board'] }, true)).toMatchObject({
      reason: 'not_allowed',
      ownRequest: true,
    });

    clock += 1000;
    // Dave decides through baton_decide's two rounds (the MCP tool's channel).
    const asked = await runner.decide({ id, context: dave });
    expect(asked.type).toBe('input_required');
    const second = await runner.decide({
      id,
      context: dave,
      requestState: asked.type === 'input_required' ? asked.requestState : '',
      inputResponses: { decision: { action: 'accept', content: { approve: true } } },
    });
    expect(text(second)).toMatch(
      /^Recorded board_approval .* The flow has ended: Spend of 900 approved \(bob:yes,dave:yes\)\./,
    );
    expect(await ended(id)).toBe('completed');

    // The ledger: two votes, the decision decided by the vote that completed it, through the tool.
    const votes = await ledger.decisions.listVotes(id);
    expect(votes.map((v) => [v.voterName, v.displayName, v.via, v.decidedAt])).toEqual([
      ['bob', 'Bob Builder', 'decide_api', START + 1000],
      ['dave', null, 'decide', START + 2000],
    ]);
    const [record] = await ledger.decisions.listDecisions({ id });
    expect(record).toMatchObject({ status: 'decided', deciderName: 'dave', via: 'decide', decidedAt: START + 2000 });

    // The audit trail: one round delivered the decision, with every vote (hash, time, channel, answer);
    // names stay in the ledger's name columns.
    const rounds = await audit.rounds(id);
    const delivered = rounds.flatMap((r) => r.received).filter((a) => a.key === 'board_approval');
    const hash = (p: string) => codec.digest(p, 'audit-principal');
    expect(delivered).toEqual([
      {
        key: 'board_approval',
        action: 'accept',
        decider: hash('dave'),
        decidedAt: START + 2000,
        via: 'decide',
        votes: [
          {
            decider: hash('bob'),
            decidedAt: START + 1000,
            via: 'decide_api',
            approves: true,
            value: { approve: true, comment: 'fine by me' },
          },
          { decider: hash('dave'), decidedAt: START + 2000, via: 'decide', approves: true, value: { approve: true } },
        ],
        value: { action: 'accept', content: { approve: true } },
      },
    ]);
    // (dave's round has its caller's principalName, as every round does with names stored.)
    expect(JSON.stringify(rounds)).not.toMatch(/Bob Builder|"bob"/);
    // After the end, a third member is told it has been decided.
    expect(await vote(runner, id, erin, true)).toMatchObject({ status: 'refused', reason: 'ended' });
  });

  it('counts people: a quorum decision is never handed over, and no absence delegate votes for anyone', async () => {
    const runner = makeRunner();
    const id = await request(runner);
    const handed = await runner.delegateDecision({ id, to: 'frank', context: bob });
    expect(handed).toMatchObject({ status: 'refused', reason: 'not_allowed' });
    expect(text(handed as { message: string })).toMatch(/each voting in their own right: it cannot be handed over/);
    // Frank, outside the board, stands in for an absent Bob: he still may not vote for him.
    const frank: DecisionCaller = { principal: 'frank', roles: [] };
    const absence = await runner.operators.setAbsence({
      principal: 'bob',
      delegate: 'frank',
      roles: ['board'],
      startsAt: START,
      endsAt: START + 3_600_000,
      reason: 'holiday',
      operator: 'ops',
    });
    expect(absence).toMatchObject({ status: 'set' });
    expect(await runner.inbox(frank)).toEqual([]);
    expect(await vote(runner, id, frank, true)).toMatchObject({ status: 'refused', reason: 'not_allowed' });
    // Bob and Dave, each in their own right, make the quorum.
    expect(await vote(runner, id, bob, true)).toMatchObject({ status: 'recorded' });
    expect(await vote(runner, id, dave, true)).toMatchObject({ status: 'recorded' });
    expect(await ledger.decisions.listVotes(id)).toHaveLength(2);
  });

  it('ends rejected at the first rejection by default', async () => {
    const runner = makeRunner();
    const id = await request(runner);
    expect(await vote(runner, id, bob, true)).toMatchObject({ status: 'recorded' });
    const rejected = await vote(runner, id, dave, false, 'too much');
    expect(rejected).toMatchObject({ status: 'recorded' });
    expect(text(rejected as { message: string })).toMatch(
      /The flow has ended: Spend of 900 rejected \(bob:yes,dave:no\)\./,
    );
    expect(await ended(id)).toBe('completed');
    expect(await ledger.decisions.listVotes(id)).toHaveLength(2);
  });

  it('ends only when rejectWhen says so (two of three)', async () => {
    const runner = makeRunner();
    const id = await request(runner, 'board_majority');
    expect(await vote(runner, id, bob, false)).toMatchObject({ status: 'recorded' });
    expect(await ended(id)).toBe('waiting');
    expect((await runner.inbox(dave))[0]?.quorum).toMatchObject({ approvals: 0, needed: 2 });
    expect(await vote(runner, id, dave, true)).toMatchObject({ status: 'recorded' });
    expect(await ended(id)).toBe('waiting');
    const last = await vote(runner, id, erin, false);
    expect(text(last as { message: string })).toMatch(/rejected \(bob:no,dave:yes,erin:no\)/);
    expect(await ended(id)).toBe('completed');

    const other = await request(runner, 'board_majority', 50);
    await vote(runner, other, bob, false);
    await vote(runner, other, dave, true);
    const approved = await vote(runner, other, erin, true);
    expect(text(approved as { message: string })).toMatch(/Spend of 50 approved \(bob:no,dave:yes,erin:yes\)/);
  });
});

describe('declaring and serving quorum decisions', () => {
  it('checks the quorum, and refuses a quorum flow on a ledger that records no votes', async () => {
    const schema = z.object({ approve: z.boolean() });
    expect(() => decision({ message: 'x', schema, role: 'board', quorum: 0 })).toThrow(FlowDefinitionError);
    expect(() => decision({ message: 'x', schema, role: 'board', quorum: 1.5 })).toThrow(/integer from 1 to 20/);
    expect(decision({ message: 'x', schema, role: 'board' }).quorum).toBe(1);
    const memory = createMemoryLedger();
    const { decisions: _d, ...withoutVotes } = memory;
    expect(() =>
      createRunner({ flows: [boardSpend], codec: createRequestStateCodec({ keys }), ledger: withoutVotes }),
    ).toThrow(/flow "board_spend" \(a decision state\) needs a ledger with the "decisions" facet/);
    await memory.close();
  });

  it('announces decision.made once, when the quorum completes (testing kit)', async () => {
    const tester = createFlowTester(boardSpend, { ledger: createMemoryLedger(), principal: 'alice', roles: ['board'] });
    const run = await tester.start({ amount: 300 });
    expect(text(await run.decide('board_approval', { approve: true }, { principal: 'bob' }))).toMatch(
      /1 more approval is needed/,
    );
    expect((await tester.notifications()).filter((n) => n.type === 'decision.made')).toHaveLength(0);
    expect(text(await run.decide('board_approval', { approve: true }, { principal: 'dave' }))).toMatch(
      /approved \(bob:yes,dave:yes\)/,
    );
    const made = (await tester.notifications()).filter((n) => n.type === 'decision.made');
    expect(made).toHaveLength(1);
    expect(made[0]?.data).toMatchObject({ key: 'board_approval', flow: 'board_spend' });
  });
});
