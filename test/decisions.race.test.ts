/**
 * A withdrawal and a decision at the same moment, on two instances: two
 * runners sharing `BATON_KEYS`-like keys and one ledger (each its own
 * connection: a real SQLite file, then the PostgreSQL the suite starts).
 * Alice withdraws on one while bob submits his decision on the other: of
 * every pair exactly one is acknowledged, the loser's answer is a refusal
 * (a tool error) saying what won, and the ledger, the flow's outcome,
 * `requests` and `resume` agree. First 36 free races (amounts that end the
 * flow on the manager's decision), then each interleaving forced by holding one instance's ledger call until the
 * other instance is done: the decision recorded but not yet delivered, the
 * withdrawal's write after the decision, the decision's write after the
 * withdrawal, each also for an amount that goes on to finance (the decision
 * that won continues the flow). Then the sequential cases: the later one is
 * refused, and above 1000 a withdrawal after the manager's decision withdraws
 * the finance stage. Rounds are held a few milliseconds only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecisionCaller,
  type FullLedger,
  generateKey,
  type InputRequiredOutcome,
  type RoundOutcome,
} from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expenseApproval } from '../examples/approvals/expenseApproval.js';
import { sharedLedgerKinds } from './helpers/e2eLedgers.js';
import { type LedgerMethod, wrapLedgerMethods } from './helpers/ledgerMethods.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-decisions-race-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const keys = [generateKey()];
const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'expense_approval' };
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const PAIRS = 36;

/**
 * The ledger, with calls that can be held: `hold(method, after?)` holds the next call of
 * `method` (made after a call of `after` returned, when given) until `release()`.
 */
function holdable(ledger: FullLedger) {
  type Hold = { method: string; after: string | undefined; reached: () => void; gate: Promise<void> };
  let armed: Hold | undefined;
  const proxy = wrapLedgerMethods(ledger, (name, method) => async (...args: unknown[]) => {
    const hold = armed;
    if (hold && hold.after === undefined && hold.method === name) {
      armed = undefined;
      hold.reached();
      await hold.gate;
    }
    const result = await method(...args);
    if (hold && hold === armed && hold.after === name) armed = { ...hold, after: undefined };
    return result;
  });
  const hold = (method: LedgerMethod, after?: LedgerMethod) => {
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const arrived = new Promise<void>((resolve) => {
      reached = resolve;
    });
    armed = { method, after, reached, gate };
    return { arrived, release };
  };
  return { ledger: proxy, hold };
}

const kinds = sharedLedgerKinds(dir);

const text = (outcome: RoundOutcome) =>
  outcome.type === 'complete'
    ? outcome.result.content.map((c) => (c as { text: string }).text).join('')
    : outcome.type === 'error'
      ? outcome.message
      : `<${outcome.type}>`;

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}

describe.each(kinds)('a withdrawal racing a decision on two instances over one %s', (_name, make) => {
  let ledgers: FullLedger[] = [];
  let drop: () => Promise<void> = async () => {};
  let held: ReturnType<typeof holdable>[] = [];
  let runners: ReturnType<typeof createRunner>[] = [];

  beforeAll(async () => {
    if (!make) return;
    const made = await make();
    drop = made.drop;
    ledgers = [await made.open(), await made.open()];
    held = ledgers.map((ledger) => holdable(ledger));
    runners = held.map(({ ledger }) =>
      createRunner({
        flows: [expenseApproval],
        codec: createRequestStateCodec({ keys }),
        ledger,
        holdMs: 5,
        pollMs: 1,
        // Calls answer at once (the waiting result), with no "retry later" rounds.
        waitInCallSeconds: 0,
      }),
    );
  });
  afterAll(async () => {
    await Promise.all(ledgers.map((ledger) => ledger.close()));
    await drop();
  });

  /** Alice's request (on instance A), and bob's decision form for it (on instance B). */
  async function prepare(amount: number) {
    const [a, b] = runners as [ReturnType<typeof createRunner>, ReturnType<typeof createRunner>];
    const first = await a.run({ flow: 'expense_approval', args: { amount, purpose: 'race' }, context: alice });
    expect(first.type === 'complete' && first.result.structuredContent).toMatchObject({ status: 'waiting' });
    const id = first.fid;
    const form = expectInput(await b.decide({ id, context: bob }));
    expect(Object.keys(form.inputRequests)).toEqual(['decision']);
    const withdraw = () => a.withdraw({ id, context: alice });
    const submit = () =>
      b.decide({
        id,
        context: bob,
        requestState: form.requestState,
        inputResponses: { decision: { action: 'accept', content: { approve: true } } },
      });
    return { id, withdraw, submit };
  }

  /** The ledger, the flow's outcome, `requests` and `resume` all tell the same story. */
  async function expectAgreed(id: string, amount: number, winner: 'withdrawal' | 'decision') {
    const ledger = ledgers[0]!;
    // The ledger holds deciders as keyed hashes (the same family as requesters'), names not stored.
    const bobHash = createRequestStateCodec({ keys }).digest(bob.principal, 'requester');
    const row = await ledger.requests.getRequest(id);
    const decisions = await ledger.decisions.listDecisions({ id });
    const manager = decisions.find((d) => d.key === 'manager_approval');
    const listed = (await runners[1]!.requests(alice)).find((r) => r.id === id);
    const resumed = text(await runners[1]!.resume({ id, context: alice }));
    if (winner === 'withdrawal') {
      expect({ status: row?.status, manager: manager?.status, decider: manager?.decider }).toEqual({
        status: 'withdrawn',
        manager: 'closed',
        decider: null,
      });
      expect(listed?.status).toBe('withdrawn');
      expect(resumed).toBe(`Expense of ${amount} withdrawn by the requester.`);
    } else if (amount > 1000) {
      expect({ status: row?.status, manager: manager?.status, decider: manager?.decider }).toEqual({
        status: 'waiting',
        manager: 'decided',
        decider: bobHash,
      });
      expect(row?.waitingFor).toEqual([{ key: 'finance_approval', role: 'finance' }]);
      expect(listed).toMatchObject({ status: 'waiting', waitingFor: [{ key: 'finance_approval', role: 'finance' }] });
      expect(resumed).toMatch(/^Waiting for a decision by someone with the role "finance"/);
    } else {
      expect({ status: row?.status, manager: manager?.status, decider: manager?.decider }).toEqual({
        status: 'completed',
        manager: 'decided',
        decider: bobHash,
      });
      expect(listed?.status).toBe('completed');
      expect(resumed).toBe(`Expense of ${amount} approved.`);
    }
  }

  it.skipIf(!make)(`acknowledges exactly one of each of ${PAIRS} racing pairs, and everything agrees`, async () => {
    const wins = { withdrawal: 0, decision: 0 };
    for (let i = 0; i < PAIRS; i++) {
      // Amounts the manager's decision ends the flow on: only one of the two can ever take effect.
      const amount = 200 + i;
      const { id, withdraw, submit } = await prepare(amount);
      // The decision takes longer to reach its write: the withdrawal starts 0 to 5 ms later.
      const later = new Promise((resolve) => setTimeout(resolve, i % 6)).then(withdraw);
      const [withdrawn, decided] = await Promise.all([later, submit()]);
      const acknowledged = [withdrawn!.type === 'complete', decided!.type === 'complete'];
      expect(acknowledged.filter(Boolean), `pair ${i}: ${text(withdrawn!)} | ${text(decided!)}`).toHaveLength(1);
      if (withdrawn!.type === 'complete') {
        wins.withdrawal++;
        expect(text(withdrawn!)).toMatch(/^Withdrawn: request /);
        expect(decided!.type).toBe('error');
        expect(text(decided!)).toMatch(/^Not recorded: request \S+ was withdrawn first, by its requester\./);
        await expectAgreed(id, amount, 'withdrawal');
      } else {
        wins.decision++;
        expect(text(decided!)).toMatch(/^Recorded manager_approval on request /);
        expect(withdrawn!.type).toBe('error');
        expect(text(withdrawn!)).toMatch(
          new RegExp(
            `^Not withdrawn: request \\S+ (was decided first and )?has ended: Expense of ${amount} approved\\.`,
          ),
        );
        await expectAgreed(id, amount, 'decision');
      }
    }
    console.info(`[race] ${PAIRS} pairs: withdrawal won ${wins.withdrawal}, decision won ${wins.decision}`);
    expect(wins.withdrawal + wins.decision).toBe(PAIRS);
  });

  it.skipIf(!make)('a decision recorded but not yet delivered wins over a withdrawal that reads it', async () => {
    for (const amount of [300, 5300]) {
      const { id, withdraw, submit } = await prepare(amount);
      // Bob's decision is recorded; his instance has not advanced the flow yet when alice withdraws.
      const paused = held[1]!.hold('getRequest', 'recordDecision');
      const decided = submit();
      await paused.arrived;
      expect((await ledgers[0]!.decisions.listDecisions({ id }))[0]?.status).toBe('decided');
      const withdrawn = await withdraw();
      paused.release();
      expect(withdrawn.type).toBe('error');
      expect(text(withdrawn)).toBe(
        amount > 1000
          ? `Not withdrawn: request ${id} was decided first and continues. Request ${id} now waits for finance_approval (role finance).`
          : `Not withdrawn: request ${id} was decided first and has ended: Expense of ${amount} approved.`,
      );
      const recorded = await decided;
      expect(recorded.type).toBe('complete');
      expect(text(recorded)).toMatch(/^Recorded manager_approval on request /);
      // Alice's withdrawal delivered bob's decision: bob is told how the flow stands.
      expect(text(recorded)).toContain(
        amount > 1000 ? `Request ${id} now waits for finance_approval` : `Expense of ${amount} approved.`,
      );
      await expectAgreed(id, amount, 'decision');
    }
  });

  it.skipIf(!make)('a withdrawal whose write comes after a decision is refused, saying what won', async () => {
    for (const amount of [400, 5400]) {
      const { id, withdraw, submit } = await prepare(amount);
      // Alice's instance has read the request and played the withdrawal; its write waits for bob.
      const paused = held[0]!.hold('parkRequest');
      const withdrawn = withdraw();
      await paused.arrived;
      const recorded = await submit();
      expect(text(recorded)).toMatch(/^Recorded manager_approval on request /);
      paused.release();
      const refused = await withdrawn;
      expect(refused.type).toBe('error');
      expect(text(refused)).toBe(
        amount > 1000
          ? `Not withdrawn: request ${id} was decided first and continues. Request ${id} now waits for finance_approval (role finance).`
          : `Not withdrawn: request ${id} was decided first and has ended: Expense of ${amount} approved.`,
      );
      await expectAgreed(id, amount, 'decision');
    }
  });

  it.skipIf(!make)('a decision whose write comes after a withdrawal is refused, saying what won', async () => {
    const { id, withdraw, submit } = await prepare(500);
    // Bob's instance has checked his answer; recording it waits for alice's withdrawal.
    const paused = held[1]!.hold('recordDecision');
    const decided = submit();
    await paused.arrived;
    const withdrawn = await withdraw();
    expect(text(withdrawn)).toMatch(/^Withdrawn: request /);
    paused.release();
    const refused = await decided;
    expect(refused.type).toBe('error');
    expect(text(refused)).toBe(
      `Not recorded: request ${id} was withdrawn first, by its requester. Your decision "manager_approval" was not recorded.`,
    );
    await expectAgreed(id, 500, 'withdrawal');
  });

  it.skipIf(!make)('one after the other: the later is refused, unless the decision continues the flow', async () => {
    const first = await prepare(600);
    expect(text(await first.withdraw())).toMatch(/^Withdrawn: request /);
    const late = await first.submit();
    expect(late.type).toBe('error');
    expect(text(late)).toBe(
      `Not recorded: request ${first.id} was withdrawn first, by its requester. Your decision "manager_approval" was not recorded.`,
    );
    await expectAgreed(first.id, 600, 'withdrawal');

    const second = await prepare(700);
    expect(text(await second.submit())).toBe(
      `Recorded manager_approval on request ${second.id} (expense_approval). The flow has ended: Expense of 700 approved.`,
    );
    const after = await second.withdraw();
    expect(after.type).toBe('error');
    expect(text(after)).toBe(
      `Not withdrawn: request ${second.id} has ended: Expense of 700 approved. It can no longer be withdrawn.`,
    );
    await expectAgreed(second.id, 700, 'decision');
    const again = await first.withdraw();
    expect(again.type).toBe('error');
    expect(text(again)).toBe(`Request ${first.id} was already withdrawn.`);

    // Above 1000 the manager's decision continues the flow: withdrawn afterwards, both are acknowledged.
    const third = await prepare(5800);
    expect(text(await third.submit())).toBe(
      `Recorded manager_approval on request ${third.id} (expense_approval). Request ${third.id} now waits for finance_approval (role finance).`,
    );
    expect(text(await third.withdraw())).toBe(
      `Withdrawn: request ${third.id} (expense_approval). The flow says: Expense of 5800 withdrawn by the requester.`,
    );
    const decisions = await ledgers[1]!.decisions.listDecisions({ id: third.id });
    expect(decisions.map((d) => [d.key, d.status])).toEqual([
      ['manager_approval', 'decided'],
      ['finance_approval', 'closed'],
    ]);
    expect((await ledgers[1]!.requests.getRequest(third.id))?.status).toBe('withdrawn');
  });
});
