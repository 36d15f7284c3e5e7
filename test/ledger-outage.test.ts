/**
 * A ledger outage in the middle of a round, at the engine level: a real SQLite ledger with one
 * chosen call failing once with `LedgerUnavailableError` (failure injection; nothing of the core
 * is mocked). Whatever meets the outage (a durable step's claim or record, a single-use token
 * minted or redeemed, a decision requested, a flow advanced after a decision) the round is
 * refused as retryable, never ends as the flow's error, and the client's retry of the SAME
 * requestState completes once the ledger answers again, without running any step twice.
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
  LedgerUnavailableError,
  type RoundOutcome,
} from '@baton/engine';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { grantTemporaryAccess, redeemAccessCode } from '../examples/approvals/accessCodes.js';
import { refundRequest, simulatedPayments } from '../examples/approvals/refundRequest.js';
import { type LedgerMethod, wrapLedgerMethods } from './helpers/ledgerMethods.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-ledger-outage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Method = LedgerMethod;

/**
 * `inner` with an outage that can be armed: the next call of `method` (once `after` has been
 * called, when given) rejects with `LedgerUnavailableError` without reaching the database.
 */
function withOutage(inner: FullLedger) {
  const armed: { method: Method; after: Method | undefined; open: boolean }[] = [];
  const failed: Method[] = [];
  const ledger = wrapLedgerMethods(inner, (name, method) => (...args: unknown[]) => {
    for (const arm of armed) if (arm.after === name) arm.open = true;
    const index = armed.findIndex((arm) => arm.method === name && arm.open);
    if (index >= 0) {
      armed.splice(index, 1);
      failed.push(name);
      return Promise.reject(new LedgerUnavailableError(`injected: the ledger is unavailable (${name})`));
    }
    return method(...args);
  });
  return {
    ledger,
    /** Fail the next `method` call (after the next `after` call, when given). */
    fail(method: Method, after?: Method) {
      armed.push({ method, after, open: after === undefined });
    },
    failed,
  };
}

let open: FullLedger[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.map((l) => l.close()));
  open = [];
});

function setup() {
  const inner = createSqliteLedger({ path: join(dir, `ledger-${Math.random().toString(36).slice(2)}.db`) });
  open.push(inner);
  const outage = withOutage(inner);
  const logged: unknown[] = [];
  const runner = createRunner({
    flows: [refundRequest, grantTemporaryAccess, redeemAccessCode],
    codec: createRequestStateCodec({ keys: [generateKey()] }),
    ledger: outage.ledger,
    holdMs: 5,
    pollMs: 5,
    log: (event) => logged.push(event),
  });
  return { runner, inner, ...outage, logged };
}

function expectInput(outcome: RoundOutcome): InputRequiredOutcome {
  if (outcome.type !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(outcome)}`);
  return outcome;
}
const text = (outcome: RoundOutcome) =>
  outcome.type === 'complete'
    ? outcome.result.content.map((c) => (c as { text: string }).text).join('')
    : `<${outcome.type}> ${JSON.stringify(outcome)}`;

const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'refund_request' };
const sam: DecisionCaller = { principal: 'sam', roles: ['supervisor'] };
let orders = 0;

/** Alice asks for a refund; returns the request to answer the reason form with (retry it as is). */
async function refundRound(runner: ReturnType<typeof setup>['runner'], amount: number) {
  const orderId = `ORD-outage-${Date.now().toString(36)}-${++orders}`;
  const args = { orderId, amount };
  const first = expectInput(await runner.run({ flow: 'refund_request', args, context: alice }));
  const request = {
    flow: 'refund_request',
    args,
    context: alice,
    requestState: first.requestState,
    inputResponses: { reason: { action: 'accept', content: { reason: 'damaged' } } },
  };
  return { orderId, first, request };
}

describe('a ledger outage inside a round', () => {
  it("at a durable step's claim: retryable, the step never ran, and the retry of the same state runs it once", async () => {
    const { runner, fail, failed } = setup();
    const issue = vi.spyOn(simulatedPayments, 'issueRefund');
    const { orderId, request } = await refundRound(runner, 100);
    fail('claimStep');
    await expect(runner.run(request)).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(failed).toEqual(['claimStep']);
    expect(issue).not.toHaveBeenCalled();
    const done = await runner.run(request);
    const [refundId] = simulatedPayments.refundsFor(orderId);
    expect(text(done)).toBe(`Refund ${refundId} issued for ${orderId}.`);
    expect(issue).toHaveBeenCalledTimes(1);
    // Answered and recorded now: a further retry gets the same outcome, nothing runs again.
    expect(await runner.run(request)).toEqual(done);
    expect(issue).toHaveBeenCalledTimes(1);
  });

  it("at a durable step's record: retryable, and the retry delivers the outcome without running the step again", async () => {
    const { runner, inner, fail, failed } = setup();
    const issue = vi.spyOn(simulatedPayments, 'issueRefund');
    const { orderId, first, request } = await refundRound(runner, 100);
    fail('recordStep');
    await expect(runner.run(request)).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(failed).toEqual(['recordStep']);
    expect(issue).toHaveBeenCalledTimes(1);
    const done = await runner.run(request);
    const [refundId] = simulatedPayments.refundsFor(orderId);
    expect(text(done)).toBe(`Refund ${refundId} issued for ${orderId}.`);
    expect(issue).toHaveBeenCalledTimes(1);
    expect(await inner.steps.getStep(first.fid, 'issueRefund#0')).toMatchObject({ status: 'succeeded', claims: 1 });
  });

  it('minting a single-use token in a step: retryable, and the retry mints the code (one that works once)', async () => {
    const { runner, fail, failed } = setup();
    const context: CallContext = { principal: 'bob', method: 'tools/call', target: 'grant_temporary_access' };
    const args = { resource: 'prod-db', minutes: 5 };
    const asked = expectInput(await runner.run({ flow: 'grant_temporary_access', args, context }));
    const request = {
      flow: 'grant_temporary_access',
      args,
      context,
      requestState: asked.requestState,
      inputResponses: { approval: { action: 'accept', content: { approve: true } } },
    };
    fail('mintToken');
    await expect(runner.run(request)).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(failed).toEqual(['mintToken']);
    const granted = await runner.run(request);
    const code = /code: (\S+)/.exec(text(granted))?.[1];
    expect(code).toBeTruthy();
    const redeem = () =>
      runner.run({
        flow: 'redeem_access_code',
        args: { code: code! },
        context: { principal: 'carol', method: 'tools/call', target: 'redeem_access_code' },
      });
    // Redeeming meets an outage too: retryable, the code is not used up, the retry redeems it.
    fail('redeemToken');
    await expect(redeem()).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(text(await redeem())).toContain('Access code accepted: access to prod-db');
    expect(text(await redeem())).toContain('already used');
  });

  it('requesting a decision: retryable, and the retry parks the request and asks the supervisor once', async () => {
    const { runner, fail, failed } = setup();
    const issue = vi.spyOn(simulatedPayments, 'issueRefund');
    const { orderId, first, request } = await refundRound(runner, 450);
    fail('requestDecisions');
    await expect(runner.run(request)).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(failed).toEqual(['requestDecisions']);
    const waiting = expectInput(await runner.run(request));
    expect(waiting.inputRequests).toEqual({}); // retry later
    expect((await runner.inbox(sam)).map((item) => item.id)).toEqual([first.fid]);
    // The supervisor decides; advancing the flow meets an outage: the decision stays recorded.
    const asked = expectInput(await runner.decide({ id: first.fid, context: sam }));
    fail('getRequest', 'recordDecision');
    const recorded = await runner.decide({
      id: first.fid,
      context: sam,
      requestState: asked.requestState,
      inputResponses: { decision: { action: 'accept', content: { approve: true } } },
    });
    expect(failed).toEqual(['requestDecisions', 'getRequest']);
    expect(text(recorded)).toMatch(/^Recorded supervisor on request .*continues when its requester comes back/);
    expect(issue).not.toHaveBeenCalled();
    // The requester's next round delivers it: the refund is issued, once.
    const done = await runner.run({ ...request, requestState: waiting.requestState, inputResponses: {} });
    const [refundId] = simulatedPayments.refundsFor(orderId);
    expect(text(done)).toBe(`Refund ${refundId} issued for ${orderId}.`);
    expect(issue).toHaveBeenCalledTimes(1);
  });

  it('recording a decision: retryable, and the retry of the same decide state records it', async () => {
    const { runner, fail } = setup();
    const { first, request } = await refundRound(runner, 450);
    expectInput(await runner.run(request));
    const asked = expectInput(await runner.decide({ id: first.fid, context: sam }));
    const answer = {
      id: first.fid,
      context: sam,
      requestState: asked.requestState,
      inputResponses: { decision: { action: 'accept', content: { approve: false } } },
    };
    fail('recordDecision');
    await expect(runner.decide(answer)).rejects.toBeInstanceOf(LedgerUnavailableError);
    expect(text(await runner.decide(answer))).toMatch(/^Recorded supervisor on request /);
  });
});
