/**
 * The `refund_request` example at the engine level: the requester's reason
 * form, no decision at or below 200, a supervisor's decision above it (four
 * eyes, the role, the 24 hour deadline), the refund issued exactly once by
 * the payment provider bound through `implement`, and the rejection,
 * withdrawal and cancellation texts. Real runner, the memory ledger, a
 * movable clock; rounds are held a few milliseconds only.
 */
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
import { createMemoryLedger } from '@baton/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { refundRequest, simulatedPayments } from '../examples/approvals/refundRequest.js';

const keys = [generateKey()];
const START = Date.UTC(2026, 10, 30, 9, 0, 0);
const HOUR = 3600 * 1000;
let clock = START;
const now = () => clock;
let ledger: FullLedger;
let orders = 0;

const alice: CallContext = {
  principal: 'alice',
  method: 'tools/call',
  target: 'refund_request',
  roles: ['supervisor'],
};
const sam: DecisionCaller = { principal: 'sam', roles: ['supervisor'] };
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };

beforeEach(() => {
  clock = START;
  ledger = createMemoryLedger();
});
afterEach(() => ledger.close());

const makeRunner = () =>
  createRunner({
    flows: [refundRequest],
    codec: createRequestStateCodec({ keys, now }),
    now,
    ledger,
    holdMs: 5,
    pollMs: 1,
  });
type TestRunner = ReturnType<typeof makeRunner>;

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}
const text = (outcome: RoundOutcome) => {
  if (outcome.type === 'error') return `ERROR ${outcome.message}`;
  if (outcome.type !== 'complete') throw new Error(`expected complete, got ${JSON.stringify(outcome)}`);
  return outcome.result.content.map((c) => (c as { text: string }).text).join('');
};

/** A fresh order id, so the provider's record of refunds is per test. */
const newOrder = () => `ORD-${Date.now().toString(36)}-${++orders}`;

/** Alice asks for a refund and answers the reason form; returns the round after it. */
async function requestRefund(runner: TestRunner, orderId: string, amount: number) {
  const args = { orderId, amount };
  const first = expectInput(await runner.run({ flow: 'refund_request', args, context: alice }));
  expect(Object.keys(first.inputRequests)).toEqual(['reason']);
  expect(first.inputRequests.reason).toMatchObject({
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: `Why should order ${orderId} be refunded?`,
      requestedSchema: {
        properties: { reason: { type: 'string', enum: ['damaged', 'late', 'other'] }, note: { maxLength: 300 } },
      },
    },
  });
  const next = await runner.run({
    flow: 'refund_request',
    args,
    context: alice,
    requestState: first.requestState,
    inputResponses: { reason: { action: 'accept', content: { reason: 'damaged', note: 'box crushed' } } },
  });
  return { first, next, args };
}

/** A full decide call by `who`: ask, then answer. */
async function decide(runner: TestRunner, who: DecisionCaller, id: string, approve: boolean) {
  const asked = await runner.decide({ id, context: who });
  if (asked.type !== 'input_required') return asked;
  return runner.decide({
    id,
    context: who,
    requestState: asked.requestState,
    inputResponses: { decision: { action: 'accept', content: { approve } } },
  });
}

describe('refund_request', () => {
  it('at or below 200 asks no one else: the refund is issued right after the reason', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { next } = await requestRefund(runner, orderId, 200);
    const refunds = simulatedPayments.refundsFor(orderId);
    expect(refunds).toHaveLength(1);
    expect(refunds[0]).toMatch(/^RF-[0-9A-F]{10}$/);
    expect(text(next)).toBe(`Refund ${refunds[0]} issued for ${orderId}.`);
    expect(await runner.inbox(sam)).toEqual([]);
  });

  it('above 200 waits for a supervisor; once approved, the refund is issued exactly once', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { first, next } = await requestRefund(runner, orderId, 450);
    const waiting = expectInput(next);
    expect(waiting.inputRequests).toEqual({}); // retry later
    expect(await runner.inbox(bob)).toEqual([]); // wrong role
    expect(await runner.inbox(sam)).toEqual([
      {
        id: first.fid,
        key: 'supervisor',
        flow: 'refund_request',
        message: `Refund 450 for order ${orderId} (reason: damaged)?`,
        requestedAt: START,
        deadline: START + 24 * HOUR,
      },
    ]);
    expect(simulatedPayments.refundsFor(orderId)).toEqual([]);
    const recorded = await decide(runner, sam, first.fid, true);
    const [refundId] = simulatedPayments.refundsFor(orderId);
    expect(text(recorded)).toMatch(/^Recorded supervisor on request /);
    expect(text(recorded)).toContain(`Refund ${refundId} issued for ${orderId}.`);
    // The requester's retry and resume see the same refund; nothing is issued again.
    expect(
      text(
        await runner.run({
          flow: 'refund_request',
          args: { orderId, amount: 450 },
          context: alice,
          requestState: waiting.requestState,
        }),
      ),
    ).toBe(`Refund ${refundId} issued for ${orderId}.`);
    expect(text(await runner.resume({ id: first.fid, context: alice }))).toBe(
      `Refund ${refundId} issued for ${orderId}.`,
    );
    expect(simulatedPayments.refundsFor(orderId)).toEqual([refundId]);
    // The decider is stored as a keyed hash, never readably (no storePrincipalNames here).
    const [decided] = await ledger.decisions.listDecisions({ id: first.fid });
    expect(decided).toMatchObject({ status: 'decided', deciderName: null });
    expect(decided!.decider).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(decided!.decider).not.toBe('sam');
  });

  it('a supervisor rejection issues nothing', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { first } = await requestRefund(runner, orderId, 900);
    expect(text(await decide(runner, sam, first.fid, false))).toContain(
      `Refund of 900 for ${orderId} rejected by the supervisor.`,
    );
    expect(text(await runner.resume({ id: first.fid, context: alice }))).toBe(
      `Refund of 900 for ${orderId} rejected by the supervisor.`,
    );
    expect(simulatedPayments.refundsFor(orderId)).toEqual([]);
  });

  it('four eyes: the requester cannot approve their own refund, even as a supervisor', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { first } = await requestRefund(runner, orderId, 300);
    expect(await runner.inbox({ principal: 'alice', roles: ['supervisor'] })).toEqual([]);
    const own = await runner.decide({ id: first.fid, context: { principal: 'alice', roles: ['supervisor'] } });
    expect(own.type === 'error' && own.message).toMatch(/four eyes/);
    expect(simulatedPayments.refundsFor(orderId)).toEqual([]);
  });

  it('expires after 24 hours without a decision: not decidable, the requester gets "expired"', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { first } = await requestRefund(runner, orderId, 300);
    clock += 24 * HOUR - 60_000;
    expect(await runner.inbox(sam)).toHaveLength(1);
    clock += 61_000;
    expect(await runner.inbox(sam)).toEqual([]);
    const late = await decide(runner, sam, first.fid, true);
    expect(late.type === 'error' && late.message).toMatch(/expired/);
    expect(text(await runner.resume({ id: first.fid, context: alice }))).toBe(
      `Refund of 300 for ${orderId} expired: no supervisor decision within 24 hours.`,
    );
    expect(simulatedPayments.refundsFor(orderId)).toEqual([]);
  });

  it('withdrawal and a declined reason end with clear texts and no refund', async () => {
    const runner = makeRunner();
    const orderId = newOrder();
    const { first } = await requestRefund(runner, orderId, 300);
    expect(text(await runner.withdraw({ id: first.fid, context: alice }))).toMatch(/^Withdrawn/);
    expect(text(await runner.resume({ id: first.fid, context: alice }))).toBe(
      `Refund of 300 for ${orderId} withdrawn by the requester.`,
    );
    const other = newOrder();
    const asked = expectInput(
      await runner.run({ flow: 'refund_request', args: { orderId: other, amount: 50 }, context: alice }),
    );
    const declined = await runner.run({
      flow: 'refund_request',
      args: { orderId: other, amount: 50 },
      context: alice,
      requestState: asked.requestState,
      inputResponses: { reason: { action: 'decline' } },
    });
    expect(text(declined)).toBe(`Refund for ${other} cancelled: no reason was given.`);
    expect(simulatedPayments.refundsFor(orderId)).toEqual([]);
    expect(simulatedPayments.refundsFor(other)).toEqual([]);
  });
});
