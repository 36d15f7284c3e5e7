/**
 * Delegation at the engine level (`runner.delegateDecision`, `runner.operators.setAbsence`):
 * a manager hands a pending decision to someone without the role, who finds it in their inbox
 * marked as handed and makes it for the manager (recorded and audited on whose behalf); the
 * hander no longer may, others in their own right still may, the requester can never be the
 * delegate; an assignee may hand it on; an absence delegate decides for an absent manager only
 * inside its time range and never on a request of the absent principal. Real runner, the memory
 * ledger and SQLite, a movable clock.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import {
  type AuditLog,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecidedEvent,
  type DecisionCaller,
  type FullLedger,
  generateKey,
} from '../src/index.js';

const keys = [generateKey()];
const START = Date.UTC(2026, 11, 2, 9, 0, 0);
const HOUR = 3600 * 1000;
let clock = START;
const now = () => clock;

const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'expense_approval', roles: ['manager'] };
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const frank: DecisionCaller = { principal: 'frank', roles: ['manager'] };
const carol: DecisionCaller = { principal: 'carol', roles: ['finance'] };
const dave: DecisionCaller = { principal: 'dave', roles: [] };
const erin: DecisionCaller = { principal: 'erin' };
const gina: DecisionCaller = { principal: 'gina' };

const dir = mkdtempSync(join(tmpdir(), 'baton-delegation-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger(),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};
let ledger: FullLedger;
let audit: AuditLog;

let decidedEvents: DecidedEvent[] = [];
function makeRunner(storePrincipalNames = false) {
  return createRunner({
    flows: [expenseApproval],
    codec: createRequestStateCodec({ keys, now }),
    now,
    ledger,
    audit,
    holdMs: 5,
    pollMs: 1,
    storePrincipalNames,
    outbox: true,
    onDecided: (event) => {
      decidedEvents.push(event);
    },
  });
}
type TestRunner = ReturnType<typeof makeRunner>;

async function requestExpense(runner: TestRunner, context: CallContext = alice, amount = 250): Promise<string> {
  const first = await runner.run({ flow: 'expense_approval', args: { amount, purpose: 'conference' }, context });
  if (first.type !== 'input_required') throw new Error(`expected a parked request, got ${JSON.stringify(first)}`);
  return first.fid;
}
const approve = { action: 'accept' as const, content: { approve: true } };

describe.each(Object.keys(LEDGERS))('on the %s ledger', (kind) => {
  beforeEach(() => {
    clock = START;
    ledger = LEDGERS[kind]!();
    audit = createMemoryAuditLog();
    decidedEvents = [];
  });
  afterEach(() => ledger.close());

  it('hands a decision to dave, who decides it for bob; bob no longer may, frank still may', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    expect(await runner.inbox(dave)).toEqual([]);
    clock += 1000;
    const handed = await runner.delegateDecision({ id, to: 'dave', reason: 'on leave', context: bob });
    expect(handed).toMatchObject({ status: 'handed', id, key: 'manager_approval', flow: 'expense_approval' });
    const [record] = await ledger.decisions.listDecisions({ id });
    expect(record?.assignee).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(record?.handover).toMatchObject({ reason: 'on leave', at: START + 1000, toName: null, byName: null });
    expect(JSON.stringify(record?.handover)).not.toMatch(/"(bob|dave)"/);

    const inbox = await runner.inbox(dave);
    expect(inbox).toHaveLength(1);
    expect(inbox[0]).toMatchObject({
      id,
      key: 'manager_approval',
      delegated: { kind: 'handover', onBehalfOf: record!.handover!.onBehalfOf, reason: 'on leave' },
    });
    expect(await runner.inbox(bob)).toEqual([]);
    expect(await runner.answerDecision({ id, context: bob, answer: approve, channel: 'api' })).toMatchObject({
      status: 'refused',
      reason: 'not_allowed',
      message: expect.stringMatching(/you handed it to/),
    });
    // Others in their own right still may; a stranger still may not.
    expect(await runner.describeDecision({ id, context: frank })).toMatchObject({ status: 'pending' });
    expect(await runner.describeDecision({ id, context: carol })).toMatchObject({ reason: 'not_allowed' });
    const described = await runner.describeDecision({ id, context: dave });
    expect(described).toMatchObject({
      status: 'pending',
      decision: { delegated: { kind: 'handover' }, handover: { reason: 'on leave', at: START + 1000 } },
    });

    clock += 1000;
    const recorded = await runner.answerDecision({ id, context: dave, answer: approve, channel: 'api' });
    expect(recorded).toMatchObject({ status: 'recorded', next: 'The flow has ended: Expense of 250 approved.' });
    const [decided] = await ledger.decisions.listDecisions({ id });
    expect(decided).toMatchObject({ status: 'decided', onBehalfOf: record!.handover!.onBehalfOf, assignee: null });
    const rounds = await audit.rounds(id);
    const delegateRound = rounds.find((r) => r.via === 'delegate');
    expect(delegateRound?.message).toMatch(/^Handed "manager_approval" to [A-Za-z0-9_-]{43}: on leave$/);
    const decidedRound = rounds.find((r) => r.via === 'decide_api');
    const answer = decidedRound?.received.find((a) => a.key === 'manager_approval');
    // Dave decided (his hash), for bob (bob's hash, the principal of the hand-over's round).
    expect(answer?.decider).toBe(decidedRound?.principal);
    expect(answer?.onBehalfOf).toBe(delegateRound?.principal);
    // The hook and the decision.made notification say so too (as keyed hashes, like the decider).
    const bobHash = record!.handover!.onBehalfOf;
    expect(decidedEvents).toEqual([expect.objectContaining({ key: 'manager_approval', onBehalfOf: bobHash })]);
    expect(decidedEvents[0]!.decider).toBe(record!.handover!.to);
    const outbox = await ledger.outbox.claimOutbox({ now: clock + 1, leaseUntil: clock + 60_000, limit: 100 });
    const made = outbox.map((m) => JSON.parse(m.body)).filter((b) => b.type === 'decision.made');
    expect(made.map((b) => b.data)).toEqual([
      expect.objectContaining({ key: 'manager_approval', decider: record!.handover!.to, onBehalfOf: bobHash }),
    ]);
  });

  it('never hands to the requester or to oneself, and only a caller who may decide hands over', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    expect(await runner.delegateDecision({ id, to: 'alice', context: bob })).toMatchObject({
      status: 'refused',
      reason: 'not_allowed',
      message: expect.stringMatching(/four eyes/),
    });
    expect(await runner.delegateDecision({ id, to: 'bob', context: bob })).toMatchObject({ reason: 'not_allowed' });
    expect(await runner.delegateDecision({ id, to: 'dave', context: carol })).toMatchObject({ reason: 'not_allowed' });
    expect(await runner.delegateDecision({ id, to: 'dave', context: alice })).toMatchObject({
      reason: 'not_allowed',
      ownRequest: true,
    });
    expect(await runner.delegateDecision({ id, to: '', context: bob })).toMatchObject({ reason: 'not_allowed' });
    expect(await runner.delegateDecision({ id: 'A'.repeat(22), to: 'dave', context: bob })).toMatchObject({
      reason: 'unknown',
    });
    expect((await ledger.requests.getRequest(id))?.version).toBe(1);
  });

  it('lets the assignee hand it on, with names shown where names are stored', async () => {
    const runner = makeRunner(true);
    const id = await requestExpense(runner, alice, 1500);
    await runner.delegateDecision({ id, to: 'dave', context: bob });
    const on = await runner.delegateDecision({ id, to: 'gina', reason: 'dave is busy', context: dave });
    expect(on).toMatchObject({ status: 'handed', to: 'gina' });
    expect((await runner.inbox(gina))[0]?.delegated).toEqual({
      kind: 'handover',
      onBehalfOf: 'bob',
      by: 'dave',
      reason: 'dave is busy',
    });
    expect(await runner.inbox(dave)).toEqual([]);
    expect(await runner.answerDecision({ id, context: gina, answer: approve, channel: 'page' })).toMatchObject({
      status: 'recorded',
    });
    expect((await ledger.decisions.listDecisions({ id })).find((r) => r.key === 'manager_approval')).toMatchObject({
      deciderName: 'gina',
      onBehalfOfName: 'bob',
    });
    // Above 1000 finance decides next, and sees who made the manager's decision and for whom.
    const view = await runner.describeDecision({ id, context: carol });
    expect(view).toMatchObject({ status: 'pending', decision: { decided: [{ decider: 'gina', onBehalfOf: 'bob' }] } });
  });

  it('lets an absence delegate decide for bob inside its range only, never on bob’s own request', async () => {
    const runner = makeRunner();
    const id = await requestExpense(runner);
    const set = await runner.operators.setAbsence({
      principal: 'bob',
      delegate: 'erin',
      roles: ['manager'],
      startsAt: START + HOUR,
      endsAt: START + 2 * HOUR,
      reason: 'holiday',
      operator: 'ops',
    });
    expect(set).toMatchObject({ status: 'set', delegation: { roles: ['manager'], reason: 'holiday', active: false } });
    expect(await runner.inbox(erin)).toEqual([]);
    clock = START + HOUR + 1;
    const inbox = await runner.inbox(erin);
    expect(inbox).toMatchObject([{ id, delegated: { kind: 'absence', reason: 'holiday' } }]);
    // Bob's own request is not erin's to decide for him (four eyes on the absent principal).
    const bobs = await requestExpense(runner, { ...alice, principal: 'bob' });
    expect((await runner.inbox(erin)).map((i) => i.id)).toEqual([id]);
    expect(await runner.describeDecision({ id: bobs, context: erin })).toMatchObject({ reason: 'not_allowed' });
    clock = START + 2 * HOUR;
    expect(await runner.inbox(erin)).toEqual([]);
    expect(await runner.answerDecision({ id, context: erin, answer: approve, channel: 'api' })).toMatchObject({
      reason: 'not_allowed',
    });
    clock = START + HOUR + 2;
    expect(await runner.answerDecision({ id, context: erin, answer: approve, channel: 'api' })).toMatchObject({
      status: 'recorded',
    });
    expect((await ledger.decisions.listDecisions({ id }))[0]?.onBehalfOf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // Refusals and removal.
    expect(
      await runner.operators.setAbsence({
        principal: 'bob',
        delegate: 'bob',
        roles: [],
        startsAt: 0,
        endsAt: 1,
        reason: 'x',
        operator: 'ops',
      }),
    ).toMatchObject({ status: 'refused' });
    expect(
      await runner.operators.setAbsence({
        principal: 'bob',
        delegate: 'erin',
        roles: [],
        startsAt: 2,
        endsAt: 1,
        reason: 'x',
        operator: 'ops',
      }),
    ).toMatchObject({ status: 'refused', message: expect.stringMatching(/end after it starts/) });
    const listed = await runner.operators.listAbsences();
    expect(listed).toHaveLength(1);
    expect(
      await runner.operators.removeAbsence({ id: listed[0]!.id, operator: 'ops', reason: 'back early' }),
    ).toMatchObject({ status: 'removed', delegation: { removedReason: 'back early' } });
    expect(await runner.operators.listAbsences()).toEqual([]);
    expect(await runner.operators.listAbsences({ all: true })).toHaveLength(1);
  });
});

describe('on a ledger without the decisions facet', () => {
  it('is refused at createRunner, naming the facet and the flow', async () => {
    clock = START;
    const full = createMemoryLedger();
    const { decisions: _d, ...rest } = full;
    ledger = rest as FullLedger;
    audit = createMemoryAuditLog();
    expect(() => makeRunner()).toThrow(
      expect.objectContaining({
        name: 'LedgerFacetMissingError',
        facet: 'decisions',
        neededBy: expect.stringMatching(/^flow "/),
      }),
    );
    await full.close();
  });
});
