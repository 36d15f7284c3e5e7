/**
 * The one-shot decision entry (`runner.describeDecision`, `runner.answerDecision`), at the
 * engine level: the same checks as `baton_decide` (four eyes, roles, unknown, decided, expired,
 * withdrawn, several keys), schema validation with the fields named, one recording per decision
 * (also under a repeated idempotency key, which answers what the first attempt did), the flow
 * advanced at once and audited with its channel. Real runner, the memory ledger and SQLite, a
 * movable clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecisionCaller,
  type DecisionSpec,
  decision,
  defineFlow,
  defineInputs,
  type FullLedger,
  generateKey,
  type InputEvents,
  InvalidParamsError,
  type RunnerOptions,
} from '../src/index.js';

const keys = [generateKey()];
const START = Date.UTC(2026, 11, 2, 9, 0, 0);
let clock = START;
const now = () => clock;
const DAY = 24 * 3600 * 1000;

const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'expense_approval', roles: ['manager'] };
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const dave: DecisionCaller = { principal: 'dave', roles: ['manager'] };
const carol: DecisionCaller = { principal: 'carol', roles: ['finance'] };

const dir = mkdtempSync(join(tmpdir(), 'baton-answer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger(),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};
let ledger: FullLedger;

/** A flow that allows values, with a sensitive argument, awaiting a role-less decision by `may`. */
const reviewInputs = defineInputs({
  review: decision({
    message: ({ context }: { context: { title: string } }) => `Review "${context.title}"?`,
    schema: z.object({ ok: z.boolean(), note: z.string().max(20).optional() }),
    may: ({ principal }) => principal === 'bob',
  }),
});
const review = defineFlow({
  name: 'review',
  description: 'A review with values in the audit trail.',
  args: z.object({ title: z.string(), secret: z.string() }),
  inputs: reviewInputs,
  auditValues: true,
  sensitive: ['secret'],
  machine: setup({
    types: {
      context: {} as { title: string; secret: string },
      input: {} as { title: string; secret: string },
      events: {} as InputEvents<typeof reviewInputs>,
    },
  }).createMachine({
    id: 'review',
    context: ({ input }) => input,
    initial: 'waiting',
    states: {
      waiting: { meta: ask(reviewInputs, 'review'), on: { 'input.review': 'done' } },
      done: { type: 'final', output: () => 'Reviewed.' },
    },
  }),
});

function makeRunner(extra: Partial<RunnerOptions> = {}) {
  return createRunner({
    flows: [expenseApproval, review],
    codec: createRequestStateCodec({ keys, now }),
    now,
    ledger,
    holdMs: 5,
    pollMs: 1,
    ...extra,
  });
}
type TestRunner = ReturnType<typeof makeRunner>;

/** Alice's expense request, parked waiting on a manager: its id. */
async function requestExpense(runner: TestRunner, amount = 250): Promise<string> {
  const first = await runner.run({ flow: 'expense_approval', args: { amount, purpose: 'conference' }, context: alice });
  if (first.type !== 'input_required') throw new Error(`expected a parked request, got ${JSON.stringify(first)}`);
  return first.fid;
}

const approve = (content: unknown = { approve: true }) => ({ action: 'accept' as const, content });

describe.each(Object.keys(LEDGERS))('on the %s ledger', (kind) => {
  beforeEach(() => {
    clock = START;
    ledger = LEDGERS[kind]!();
  });
  afterEach(() => ledger.close());

  it('describes a pending decision as data, to a caller who may make it', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const described = await runner.describeDecision({ id, context: bob });
    expect(described).toEqual({
      status: 'pending',
      decision: {
        id,
        key: 'manager_approval',
        flow: 'expense_approval',
        message: 'Approve an expense of 250 for "conference"?',
        role: 'manager',
        requestedAt: START,
        deadline: START + 3 * DAY, // the escalation to a director leaves the manager's inbox after 3 days
        requester: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        // expense_approval allows values in its audit trail: its arguments are shown.
        arguments: { amount: 250, purpose: 'conference' },
        requestedSchema: (expenseApproval.inputs.manager_approval as DecisionSpec).requestedSchema,
        decided: [],
      },
    });
  });

  it('refuses to describe with a reason code: four eyes, wrong role, unknown, bad key', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    expect(await runner.describeDecision({ id, context: alice })).toMatchObject({
      status: 'refused',
      reason: 'not_allowed',
      ownRequest: true,
      message: expect.stringMatching(/four eyes/),
    });
    const wrongRole = await runner.describeDecision({ id, context: carol });
    expect(wrongRole).toMatchObject({
      reason: 'not_allowed',
      message: expect.stringMatching(/needs the role "manager"/),
    });
    expect(wrongRole).not.toHaveProperty('ownRequest');
    expect(await runner.describeDecision({ id: 'A'.repeat(22), context: bob })).toMatchObject({ reason: 'unknown' });
    expect(await runner.describeDecision({ id: 'nope', context: bob })).toMatchObject({ reason: 'unknown' });
    expect(await runner.describeDecision({ id, key: 'finance_approval', context: carol })).toMatchObject({
      reason: 'unknown',
    });
    expect(await runner.describeDecision({ id, key: '../x', context: bob })).toMatchObject({ reason: 'unknown' });
  });

  it('answers a schema error with the fields and records nothing', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const out = await runner.answerDecision({ id, context: bob, answer: approve({ approve: 'yes' }), channel: 'api' });
    expect(out).toMatchObject({
      status: 'invalid',
      id,
      key: 'manager_approval',
      problem: 'approve: must be true or false',
      issues: [{ field: 'approve', hint: 'must be true or false' }],
    });
    expect(
      (await runner.answerDecision({ id, context: bob, answer: approve({}), channel: 'api' })) as { issues: unknown },
    ).toMatchObject({ issues: [{ field: 'approve', hint: 'required' }] });
    expect((await ledger.decisions.listDecisions({ id })).map((r) => r.status)).toEqual(['pending']);
    expect(await runner.inbox(bob)).toHaveLength(1);
  });

  it('records an accepted answer once, advances the flow, audits the channel and says who decided', async () => {
    const audit = createMemoryAuditLog();
    const codec = createRequestStateCodec({ keys, now });
    const runner = makeRunner({ audit, codec });
    const id = await requestExpense(runner);
    clock += 1000;
    const out = await runner.answerDecision({ id, context: bob, answer: approve(), channel: 'page' });
    expect(out).toEqual({
      status: 'recorded',
      id,
      key: 'manager_approval',
      flow: 'expense_approval',
      message: `Recorded manager_approval on request ${id} (expense_approval). The flow has ended: Expense of 250 approved.`,
      next: 'The flow has ended: Expense of 250 approved.',
    });
    // The requester sees it.
    const resumed = await runner.resume({ id, context: alice });
    expect(resumed.type === 'complete' && resumed.result.content).toEqual([
      { type: 'text', text: 'Expense of 250 approved.' },
    ]);
    const rounds = await audit.rounds(id);
    expect(rounds.map((r) => r.via)).toContain('decide_page');
    expect(rounds.find((r) => r.via === 'decide_page')).toMatchObject({
      principal: codec.digest('bob', 'audit-principal'),
      after: 'approved',
    });
    // Decided: by whom, to those who may make it.
    expect(await runner.answerDecision({ id, context: dave, answer: approve(), channel: 'api' })).toMatchObject({
      status: 'refused',
      reason: 'ended',
    });
  });

  it('says a decision was already made, and by whom (to a caller who may make it)', async () => {
    const runner = makeRunner({ storePrincipalNames: true });
    const id = await requestExpense(runner, 2000);
    expect(await runner.answerDecision({ id, context: bob, answer: approve(), channel: 'api' })).toMatchObject({
      status: 'recorded',
      next: `Request ${id} now waits for finance_approval (role finance).`,
    });
    expect(
      await runner.answerDecision({ id, key: 'manager_approval', context: dave, answer: approve(), channel: 'api' }),
    ).toMatchObject({
      status: 'refused',
      reason: 'already_decided',
      decidedBy: { key: 'manager_approval', decider: 'bob', you: false, decidedAt: START },
    });
    // Carol (finance) may not make the manager's decision: she is not told who made it.
    const toCarol = await runner.describeDecision({ id, key: 'manager_approval', context: carol });
    expect(toCarol).toMatchObject({ reason: 'already_decided' });
    expect('decidedBy' in toCarol).toBe(false);
    // Finance sees the pending decision with the decisions already made, and the requester by name.
    expect(await runner.describeDecision({ id, context: carol })).toMatchObject({
      status: 'pending',
      decision: {
        key: 'finance_approval',
        requester: 'alice',
        decided: [{ key: 'manager_approval', decider: 'bob', you: false }],
      },
    });
  });

  it('declines without recording, and refuses withdrawn and expired requests', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    expect(
      await runner.answerDecision({ id, context: bob, answer: { action: 'decline' }, channel: 'api' }),
    ).toMatchObject({ status: 'declined', key: 'manager_approval', message: expect.stringMatching(/still pending/) });
    expect((await ledger.decisions.listDecisions({ id })).map((r) => r.status)).toEqual(['pending']);

    clock += 8 * DAY;
    expect(await runner.answerDecision({ id, context: bob, answer: approve(), channel: 'api' })).toMatchObject({
      status: 'refused',
      reason: 'expired',
    });

    clock = START;
    const other = await requestExpense(runner);
    const withdrawn = await runner.withdraw({ id: other, context: alice });
    expect(withdrawn.type).toBe('complete');
    expect(await runner.describeDecision({ id: other, context: bob })).toMatchObject({ reason: 'withdrawn' });
  });

  it('answers a repeated idempotency key with the first result, recorded once', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner, 2000);
    const first = await runner.answerDecision({
      id,
      context: bob,
      answer: approve(),
      channel: 'api',
      idempotencyKey: 'slack-1',
    });
    expect(first).toMatchObject({ status: 'recorded' });
    // A second runner on the same ledger and keys (another instance) answers the same.
    const second = makeRunner();
    const again = await second.answerDecision({
      id,
      context: bob,
      answer: approve(),
      channel: 'api',
      idempotencyKey: 'slack-1',
    });
    expect(again).toEqual(first);
    expect((await ledger.decisions.listDecisions({ id })).filter((r) => r.status === 'decided')).toHaveLength(1);
    // Without the idempotency key, the same answer is a second attempt: refused as already made.
    expect(
      await runner.answerDecision({ id, key: 'manager_approval', context: bob, answer: approve(), channel: 'api' }),
    ).toMatchObject({
      reason: 'already_decided',
      decidedBy: { you: true },
    });
    // The same key with another answer is refused; so is a malformed key.
    expect(
      await runner.answerDecision({
        id,
        context: bob,
        answer: approve({ approve: false }),
        channel: 'api',
        idempotencyKey: 'slack-1',
      }),
    ).toMatchObject({ status: 'refused', reason: 'key_reused' });
    expect(
      await runner.answerDecision({ id, context: bob, answer: approve(), channel: 'api', idempotencyKey: 'a b' }),
    ).toMatchObject({ reason: 'key_reused' });
  });

  it('records once when answers race: the same key twice at once answers alike, two deciders one wins', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const same = { id, context: bob, answer: approve(), channel: 'api' as const, idempotencyKey: 'double-click' };
    const [a, b] = await Promise.all([runner.answerDecision(same), makeRunner().answerDecision(same)]);
    expect(a).toMatchObject({ status: 'recorded' });
    expect(b).toEqual(a);

    const other = await requestExpense(runner);
    const both = await Promise.all([
      runner.answerDecision({ id: other, context: bob, answer: approve(), channel: 'api' }),
      makeRunner().answerDecision({ id: other, context: dave, answer: approve(), channel: 'page' }),
    ]);
    expect(both.map((r) => r.status).sort()).toEqual(['recorded', 'refused']);
    expect((await ledger.decisions.listDecisions({ id: other })).filter((r) => r.status === 'decided')).toHaveLength(1);
  });

  it('keeps no schema error under an idempotency key: the same key carries the corrected answer', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const bad = { id, context: bob, answer: approve({ approve: 1 }), channel: 'api' as const, idempotencyKey: 'k-2' };
    expect(await runner.answerDecision(bad)).toMatchObject({ status: 'invalid' });
    expect(await runner.answerDecision({ ...bad, answer: approve() })).toMatchObject({ status: 'recorded' });
  });

  it('asks for a key when the caller may make several decisions, and checks answers like params', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const both: DecisionCaller = { principal: 'erin', roles: ['manager', 'finance'] };
    // Only one decision is pending at a time in expense_approval: erin makes the manager's.
    expect(await runner.describeDecision({ id, context: both })).toMatchObject({
      decision: { key: 'manager_approval' },
    });
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 100; i++) at = at.x = {} as Record<string, unknown>;
    await expect(runner.answerDecision({ id, context: bob, answer: approve(deep), channel: 'api' })).rejects.toThrow(
      InvalidParamsError,
    );
  });

  it('shows the arguments of a flow that allows values, sensitive ones redacted', async () => {
    const runner = makeRunner();
    const first = await runner.run({
      flow: 'review',
      args: { title: 'Q4 plan', secret: 's3cret' },
      context: { ...alice, target: 'review' },
    });
    const id = first.fid;
    expect(await runner.describeDecision({ id, context: bob })).toMatchObject({
      status: 'pending',
      decision: { key: 'review', arguments: { title: 'Q4 plan', secret: '[redacted]' } },
    });
    expect(await runner.describeDecision({ id, context: dave })).toMatchObject({
      reason: 'not_allowed',
      message: expect.stringMatching(/does not allow you/),
    });
    expect(
      await runner.answerDecision({ id, context: bob, answer: approve({ ok: true }), channel: 'api' }),
    ).toMatchObject({ status: 'recorded', next: 'The flow has ended: Reviewed.' });
  });
});
