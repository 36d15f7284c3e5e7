/**
 * Approvals by someone else, at the engine level: `decision()` inputs, the
 * requester's parked flow ("retry later", the waiting result, old states
 * following the latest parked state), the decision tools' runner API (inbox,
 * decide, requests, resume, withdraw), four eyes, races, deadlines, hooks and
 * the audit trail. Real runner, the memory ledger, a movable clock; rounds are
 * held a few milliseconds only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  type DecidedEvent,
  type DecisionCaller,
  type DecisionRequestedEvent,
  decision,
  defineFlow,
  defineInputs,
  FlowDefinitionError,
  type FullLedger,
  form,
  generateKey,
  type InputEvents,
  type InputRequiredOutcome,
  InvalidRequestStateError,
  type RoundOutcome,
  type RunnerLogEvent,
  type RunnerOptions,
} from '../src/index.js';

const keys = [generateKey()];
const START = Date.UTC(2026, 10, 29, 12, 0, 0);
let clock = START;
const now = () => clock;
const DAY = 24 * 3600 * 1000;

const requester: CallContext = {
  principal: 'alice',
  method: 'tools/call',
  target: 'expense_approval',
  roles: ['manager'],
};
const bob: DecisionCaller = { principal: 'bob', roles: ['manager'] };
const dave: DecisionCaller = { principal: 'dave', roles: ['manager'] };
const carol: DecisionCaller = { principal: 'carol', roles: ['finance'] };
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

const dir = mkdtempSync(join(tmpdir(), 'baton-decisions-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
/** Every scenario runs on the memory ledger and on SQLite. */
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger(),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};
let ledger: FullLedger;

function makeRunner(extra: Partial<RunnerOptions> = {}) {
  const codec = createRequestStateCodec({ keys, now });
  return createRunner({
    flows: [expenseApproval],
    codec,
    now,
    ledger,
    holdMs: 5,
    pollMs: 1,
    ...extra,
  });
}
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
const refusal = (outcome: RoundOutcome) => {
  if (outcome.type !== 'error') throw new Error(`expected a refusal, got ${JSON.stringify(outcome)}`);
  return outcome.message;
};

const args = (amount: number) => ({ amount, purpose: 'conference' });

/** Alice's first call: it waits on the manager. */
async function request(runner: TestRunner, amount = 250) {
  const first = expectInput(await runner.run({ flow: 'expense_approval', args: args(amount), context: requester }));
  expect(first.inputRequests).toEqual({});
  return first;
}

/** Alice retries a state. */
const retry = (
  runner: TestRunner,
  state: InputRequiredOutcome,
  amount = 250,
  inputResponses?: Record<string, unknown>,
) =>
  runner.run({
    flow: 'expense_approval',
    args: args(amount),
    context: requester,
    requestState: state.requestState,
    ...(inputResponses ? { inputResponses } : {}),
  });

/** A full decide call: ask, then answer. */
async function decideAll(
  runner: TestRunner,
  who: DecisionCaller,
  id: string,
  content: Record<string, unknown>,
  key?: string,
) {
  const first = await runner.decide({ id, context: who, ...(key ? { key } : {}) });
  if (first.type !== 'input_required') return first;
  return runner.decide({
    id,
    context: who,
    ...(key ? { key } : {}),
    requestState: first.requestState,
    inputResponses: { decision: accept(content) },
  });
}

describe.each(Object.keys(LEDGERS))('on the %s ledger', (kind) => {
  beforeEach(() => {
    clock = START;
    ledger = LEDGERS[kind]!();
  });
  afterEach(() => ledger.close());

  describe('declaring decisions', () => {
    it('needs a role or a predicate, and a state may not ask its caller and await a decision', () => {
      const nobody = defineInputs({ approve: decision({ message: 'x', schema: z.object({ ok: z.boolean() }) }) });
      const waits = setup({}).createMachine({ initial: 'w', states: { w: { meta: ask(nobody, 'approve') } } });
      expect(() =>
        defineFlow({ name: 'nobody', description: 'd', args: z.object({}), inputs: nobody, machine: waits }),
      ).toThrow(
        new FlowDefinitionError('flow "nobody": decision "approve" needs `role` or `may` to say who may decide'),
      );
      const inputs = defineInputs({
        approve: decision({ message: 'x', schema: z.object({ ok: z.boolean() }), role: 'boss' }),
        note: form({ message: 'n', schema: z.object({ note: z.string().max(9) }) }),
      });
      const machine = setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
        initial: 'both',
        states: {
          both: { meta: ask(inputs, 'approve', 'note'), on: { 'input.approve': 'done' } },
          done: { type: 'final' },
        },
      });
      expect(() => defineFlow({ name: 'mixed', description: 'd', args: z.object({}), inputs, machine })).toThrow(
        /flow "mixed": state "\(machine\)\.both" both asks its caller \(note\) and awaits a decision \(approve\)/,
      );
    });

    it('makes the flow need a ledger: without one its rounds say so', async () => {
      expect(expenseApproval.needsLedger).toBe(true);
      expect(expenseApproval.decisions).toEqual(['manager_approval', 'director_approval', 'finance_approval']);
      const runner = createRunner({ flows: [expenseApproval], codec: createRequestStateCodec({ keys, now }), now });
      expect(runner.awaitsDecisions).toBe(true);
      const out = await runner.run({ flow: 'expense_approval', args: args(5), context: requester });
      expect(refusal(out)).toMatch(/needs a ledger/);
    });
  });

  describe("the requester's side", () => {
    it('answers "retry later" with a fresh state each round, at most 3 times, then the waiting result', async () => {
      const runner = makeRunner();
      const states = [await request(runner)];
      for (let i = 0; i < 2; i++) {
        const next = expectInput(await retry(runner, states[states.length - 1]!));
        expect(next.inputRequests).toEqual({});
        expect(next.fid).toBe(states[0]!.fid);
        states.push(next);
      }
      expect(new Set(states.map((s) => s.requestState)).size).toBe(3);
      const done = await retry(runner, states[2]!);
      const id = states[0]!.fid;
      expect(done.type).toBe('complete');
      expect(text(done)).toBe(
        `Waiting for a decision by someone with the role "manager" (manager_approval) on request ${id}. Continue later with baton_resume {"id":"${id}"}.`,
      );
      expect(done.type === 'complete' && done.result.structuredContent).toEqual({
        status: 'waiting',
        id,
        waitingFor: [{ key: 'manager_approval', role: 'manager' }],
      });
    });

    it('completes with the waiting result once the call waited longer than waitInCallSeconds', async () => {
      const runner = makeRunner({ waitInCallSeconds: 20 });
      const first = await request(runner);
      clock += 21_000;
      const out = await retry(runner, first);
      expect(out.type === 'complete' && out.result.structuredContent?.status).toBe('waiting');
    });

    it('holds the round open and continues at once when a decider moves the flow meanwhile', async () => {
      const runner = makeRunner();
      const holding = makeRunner({ holdMs: 30_000, pollMs: 5 }); // another instance, on the same ledger
      const first = await request(runner);
      const asked = expectInput(await runner.decide({ id: first.fid, context: bob }));
      const held = retry(holding, first);
      await new Promise((resolve) => setTimeout(resolve, 30));
      const started = performance.now();
      await runner.decide({
        id: first.fid,
        context: bob,
        requestState: asked.requestState,
        inputResponses: { decision: accept({ approve: true }) },
      });
      expect(text(await held)).toBe('Expense of 250 approved.');
      expect(performance.now() - started).toBeLessThan(15_000); // well before the 30 s hold ends
    });

    it('parks no readable principal unless asked to', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      const row = await ledger.requests.getRequest(first.fid);
      expect(row).toMatchObject({
        status: 'waiting',
        requesterName: null,
        waitingFor: [{ key: 'manager_approval', role: 'manager' }],
      });
      expect(JSON.stringify(row)).not.toContain('alice');
      const named = makeRunner({ storePrincipalNames: true });
      const second = await request(named);
      expect((await ledger.requests.getRequest(second.fid))?.requesterName).toBe('alice');
      // The former name of the option still works.
      const alias = makeRunner({ storeRequesterNames: true });
      const third = await request(alias);
      expect((await ledger.requests.getRequest(third.fid))?.requesterName).toBe('alice');
    });
  });

  describe('deciding', () => {
    it('lists the decision in the inbox of others with the role, and records it once with the decider', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      expect(await runner.inbox(requester)).toEqual([]);
      expect(await runner.inbox(carol)).toEqual([]);
      expect(await runner.inbox({ principal: 'eve' })).toEqual([]);
      expect(await runner.inbox(bob)).toEqual([
        {
          id: first.fid,
          key: 'manager_approval',
          flow: 'expense_approval',
          message: 'Approve an expense of 250 for "conference"?',
          requestedAt: START,
          // Decidable by a manager until the escalation to a director (3 days).
          deadline: START + 3 * DAY,
        },
      ]);
      const asked = expectInput(await runner.decide({ id: first.fid, context: bob }));
      expect(asked.inputRequests).toEqual({
        decision: {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: 'Approve an expense of 250 for "conference"?',
            requestedSchema: expect.objectContaining({ required: ['approve'] }),
          },
        },
      });
      // An invalid answer is asked again, saying why.
      const again = expectInput(
        await runner.decide({
          id: first.fid,
          context: bob,
          requestState: asked.requestState,
          inputResponses: { decision: accept({ approve: 'yes' }) },
        }),
      );
      expect((again.inputRequests.decision as { params: { message: string } }).params.message).toMatch(
        /not accepted \(approve:/,
      );
      const recorded = await runner.decide({
        id: first.fid,
        context: bob,
        requestState: again.requestState,
        inputResponses: { decision: accept({ approve: true, comment: 'looks fine' }) },
      });
      expect(text(recorded)).toMatch(
        /^Recorded manager_approval on request .* The flow has ended: Expense of 250 approved\./,
      );
      const [record] = await ledger.decisions.listDecisions({ id: first.fid });
      // The decider as a keyed hash, like requesters; no readable name unless names are stored.
      expect(record).toMatchObject({ status: 'decided', decider: expect.stringMatching(/^[A-Za-z0-9_-]{20,}$/) });
      expect(record!.deciderName).toBeNull();
      expect(record!.decider).not.toBe('bob');
      expect(record!.content).not.toContain('looks fine');
      // The state was single-use.
      await expect(
        runner.decide({
          id: first.fid,
          context: bob,
          requestState: again.requestState,
          inputResponses: { decision: accept({ approve: false }) },
        }),
      ).rejects.toBeInstanceOf(InvalidRequestStateError);
      expect(await runner.inbox(bob)).toEqual([]);
      expect(text(await retry(runner, first))).toBe('Expense of 250 approved.');
    });

    it('refuses the requester (four eyes), whatever their roles, and the wrong role', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      const own = await runner.decide({
        id: first.fid,
        context: { principal: 'alice', roles: ['manager', 'finance'] },
      });
      expect(refusal(own)).toMatch(/you cannot decide it: a requester never decides their own request \(four eyes\)/);
      const wrong = await runner.decide({ id: first.fid, context: carol });
      expect(refusal(wrong)).toMatch(/needs the role "manager"/);
      const keyed = await runner.decide({ id: first.fid, key: 'manager_approval', context: carol });
      expect(refusal(keyed)).toMatch(
        /You may not make the decision "manager_approval" .*: it needs the role "manager"/,
      );
    });

    it('a race of two deciders records exactly one', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      const [a, b] = [
        expectInput(await runner.decide({ id: first.fid, context: bob })),
        expectInput(await runner.decide({ id: first.fid, context: dave })),
      ];
      const results = await Promise.all([
        runner.decide({
          id: first.fid,
          context: bob,
          requestState: a.requestState,
          inputResponses: { decision: accept({ approve: true }) },
        }),
        runner.decide({
          id: first.fid,
          context: dave,
          requestState: b.requestState,
          inputResponses: { decision: accept({ approve: false }) },
        }),
      ]);
      const recorded = results.filter((r) => r.type === 'complete' && text(r).startsWith('Recorded'));
      const refused = results.filter((r) => r.type === 'error');
      expect(recorded).toHaveLength(1);
      expect(refused).toHaveLength(1);
      expect(refusal(refused[0]!)).toMatch(
        /was made by someone else first; yours was not recorded|has already been made/,
      );
      const decided = (await ledger.decisions.listDecisions({ id: first.fid })).filter((d) => d.status === 'decided');
      expect(decided).toHaveLength(1);
    });

    it('advances the flow at once: finance is asked right after the manager, without the requester', async () => {
      const runner = makeRunner();
      const first = await request(runner, 2500);
      const recorded = await decideAll(runner, bob, first.fid, { approve: true });
      expect(text(recorded)).toMatch(/now waits for finance_approval \(role finance\)/);
      expect(await runner.inbox(carol)).toMatchObject([{ id: first.fid, key: 'finance_approval' }]);
      expect(await runner.requests(requester)).toEqual([
        {
          id: first.fid,
          flow: 'expense_approval',
          status: 'waiting',
          waitingFor: [{ key: 'finance_approval', role: 'finance' }],
        },
      ]);
      expect(text(await decideAll(runner, carol, first.fid, { approve: false }))).toMatch(/rejected by finance/);
      expect(await runner.requests(requester)).toEqual([
        { id: first.fid, flow: 'expense_approval', status: 'completed' },
      ]);
      expect(text(await retry(runner, first, 2500))).toBe('Expense of 2500 rejected by finance.');
    });

    it('never asks finance after a manager rejection', async () => {
      const runner = makeRunner();
      const first = await request(runner, 2500);
      await decideAll(runner, bob, first.fid, { approve: false });
      expect(await runner.inbox(carol)).toEqual([]);
      expect(text(await retry(runner, first, 2500))).toBe('Expense of 2500 rejected by manager.');
    });

    it('an old state continues from the latest parked state, and is still single-use', async () => {
      const runner = makeRunner();
      const first = await request(runner, 2500);
      const second = expectInput(await retry(runner, first, 2500));
      await decideAll(runner, bob, first.fid, { approve: true });
      // `second` was minted while the manager was awaited: it follows to "waiting for finance".
      const followed = expectInput(await retry(runner, second, 2500));
      expect(followed.inputRequests).toEqual({});
      expect((await ledger.requests.getRequest(first.fid))?.waitingFor).toEqual([
        { key: 'finance_approval', role: 'finance' },
      ]);
      // Still single-use: presenting it again answers what its one round answered, nothing runs again.
      expect(expectInput(await retry(runner, second, 2500)).requestState).toBe(followed.requestState);
      await decideAll(runner, carol, first.fid, { approve: true });
      expect(text(await retry(runner, followed, 2500))).toBe('Expense of 2500 approved.');
    });

    it('a decline is not recorded, and the decision stays pending', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      const asked = expectInput(await runner.decide({ id: first.fid, context: bob }));
      const out = await runner.decide({
        id: first.fid,
        context: bob,
        requestState: asked.requestState,
        inputResponses: { decision: { action: 'decline' } },
      });
      expect(text(out)).toMatch(/^Not recorded: you declined/);
      expect(await runner.inbox(bob)).toHaveLength(1);
    });

    it('names the keys when the caller may make more than one decision', async () => {
      const inputs = defineInputs({
        legal: decision({ message: 'Legal?', schema: z.object({ ok: z.boolean() }), role: 'boss' }),
        budget: decision({ message: 'Budget?', schema: z.object({ ok: z.boolean() }), role: 'boss' }),
      });
      const machine = setup({ types: { events: {} as InputEvents<typeof inputs> } }).createMachine({
        type: 'parallel',
        states: {
          a: {
            initial: 'w',
            states: { w: { meta: ask(inputs, 'legal'), on: { 'input.legal': 'd' } }, d: { type: 'final' } },
          },
          b: {
            initial: 'w',
            states: { w: { meta: ask(inputs, 'budget'), on: { 'input.budget': 'd' } }, d: { type: 'final' } },
          },
        },
        output: () => 'both decided',
      });
      const flow = defineFlow({ name: 'two', description: 'two decisions', args: z.object({}), inputs, machine });
      const runner = makeRunner({ flows: [flow] });
      const first = expectInput(await runner.run({ flow: 'two', args: {}, context: { ...requester, target: 'two' } }));
      const boss = { principal: 'bob', roles: ['boss'] };
      expect(refusal(await runner.decide({ id: first.fid, context: boss }))).toMatch(
        /more than one decision .* \(budget, legal\): say which with "key"/,
      );
      expect(text(await decideAll(runner, boss, first.fid, { ok: true }, 'legal'))).toMatch(/^Recorded legal/);
      expect(text(await decideAll(runner, boss, first.fid, { ok: true }))).toMatch(/^Recorded budget .*both decided/);
    });

    it('lets a predicate say who may decide, on the parked context', async () => {
      const inputs = defineInputs({
        sign_off: decision({
          message: 'Sign off?',
          schema: z.object({ ok: z.boolean() }),
          may: ({ context, principal }: { context: { owner: string }; principal: string }) =>
            principal === context.owner,
        }),
      });
      const machine = setup({
        types: {
          context: {} as { owner: string },
          input: {} as { owner: string },
          events: {} as InputEvents<typeof inputs>,
        },
      }).createMachine({
        context: ({ input }) => input,
        initial: 'w',
        states: {
          w: { meta: ask(inputs, 'sign_off'), on: { 'input.sign_off': 'd' } },
          d: { type: 'final', output: () => 'signed' },
        },
      });
      const flow = defineFlow({
        name: 'sign',
        description: 's',
        args: z.object({ owner: z.string() }),
        inputs,
        machine,
      });
      const runner = makeRunner({ flows: [flow] });
      const first = expectInput(
        await runner.run({ flow: 'sign', args: { owner: 'dave' }, context: { ...requester, target: 'sign' } }),
      );
      expect(await runner.inbox(bob)).toEqual([]);
      expect(await runner.inbox(dave)).toMatchObject([{ key: 'sign_off' }]);
      expect(refusal(await runner.decide({ id: first.fid, context: bob }))).toMatch(/does not allow you/);
      expect(text(await decideAll(runner, dave, first.fid, { ok: true }))).toMatch(/^Recorded sign_off.*signed/);
    });
  });

  describe('deciders in the ledger', () => {
    /** A flow whose result names who decided: the machine receives the readable decider. */
    function signedBy() {
      const inputs = defineInputs({
        sign_off: decision({ message: 'Sign off?', schema: z.object({ ok: z.boolean() }), role: 'manager' }),
      });
      const machine = setup({
        types: { context: {} as { by: string }, events: {} as InputEvents<typeof inputs> },
      }).createMachine({
        context: { by: '' },
        initial: 'w',
        states: {
          w: {
            meta: ask(inputs, 'sign_off'),
            on: { 'input.sign_off': { target: 'd', actions: assign({ by: ({ event }) => event.decider }) } },
          },
          d: { type: 'final' },
        },
        output: ({ context }) => `signed by ${context.by}`,
      });
      return defineFlow({ name: 'signed_by', description: 's', args: z.object({}), inputs, machine });
    }

    it('stores the decider as a keyed hash, the name only with storePrincipalNames; the flow still gets the id', async () => {
      const flow = signedBy();
      for (const storePrincipalNames of [false, true]) {
        const runner = makeRunner({ flows: [flow], storePrincipalNames });
        const first = expectInput(
          await runner.run({ flow: 'signed_by', args: {}, context: { ...requester, target: 'signed_by' } }),
        );
        expect(text(await decideAll(runner, bob, first.fid, { ok: true }))).toMatch(/signed by bob/);
        const [record] = await ledger.decisions.listDecisions({ id: first.fid });
        // The same keyed hash as bob's requests carry as their requester.
        const own = expectInput(
          await runner.run({
            flow: 'signed_by',
            args: {},
            context: { ...requester, principal: 'bob', target: 'signed_by' },
          }),
        );
        expect(record!.decider).toBe((await ledger.requests.getRequest(own.fid))!.requester);
        expect(record!.deciderName).toBe(storePrincipalNames ? 'bob' : null);
        // The requester's next round answers with the parked result.
        const again = await runner.run({
          flow: 'signed_by',
          args: {},
          context: { ...requester, target: 'signed_by' },
          requestState: first.requestState,
        });
        expect(text(again)).toBe('signed by bob');
      }
    });
  });

  describe('deadlines, withdrawal and ended flows', () => {
    it('past the deadline a decision is neither listed nor decidable, and the requester gets the after branch', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      // The manager's decision lasts until the escalation (3 days), then a director's until 7 days.
      clock += 3 * DAY - 60_000;
      const asked = expectInput(await runner.decide({ id: first.fid, context: bob }));
      clock += 61_000;
      expect(await runner.inbox(bob)).toEqual([]);
      expect(refusal(await runner.decide({ id: first.fid, context: bob }))).toMatch(/expired/);
      expect(
        refusal(
          await runner.decide({
            id: first.fid,
            context: bob,
            requestState: asked.requestState,
            inputResponses: { decision: accept({ approve: true }) },
          }),
        ),
      ).toMatch(/expired/);
      // With no scheduler here, the requester's next round fires the reminder and the escalation:
      // a director now decides ("retry later" for the requester), until 7 days.
      expect((await runner.resume({ id: first.fid, context: requester })).type).toBe('input_required');
      expect((await runner.inbox({ principal: 'dan', roles: ['director'] })).map((d) => d.key)).toEqual([
        'director_approval',
      ]);
      clock += 4 * DAY;
      expect(await runner.inbox({ principal: 'dan', roles: ['director'] })).toEqual([]);
      expect(text(await runner.resume({ id: first.fid, context: requester }))).toBe(
        'Expense of 250 expired: no decision within 7 days.',
      );
      expect(await runner.requests(requester)).toEqual([
        // The flow handled its deadline (its own "expired" final state): the request completed.
        { id: first.fid, flow: 'expense_approval', status: 'completed' },
      ]);
      expect((await ledger.decisions.listDecisions({ id: first.fid })).map((d) => d.status)).toEqual([
        'closed',
        'closed',
      ]);
    });

    it('withdraw: only the requester, only while waiting; the flow takes its withdrawal path', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      expect(refusal(await runner.withdraw({ id: first.fid, context: bob }))).toMatch(
        /Only the requester may withdraw/,
      );
      const out = await runner.withdraw({ id: first.fid, context: requester });
      expect(text(out)).toMatch(/^Withdrawn: request .* withdrawn by the requester\./);
      expect(refusal(await runner.withdraw({ id: first.fid, context: requester }))).toMatch(/already withdrawn/);
      expect(refusal(await runner.decide({ id: first.fid, context: bob }))).toMatch(/was withdrawn by its requester/);
      expect(await runner.inbox(bob)).toEqual([]);
      expect(text(await retry(runner, first))).toBe('Expense of 250 withdrawn by the requester.');
      expect(text(await runner.resume({ id: first.fid, context: requester }))).toBe(
        'Expense of 250 withdrawn by the requester.',
      );
      expect(await runner.requests(requester)).toEqual([
        { id: first.fid, flow: 'expense_approval', status: 'withdrawn' },
      ]);
    });

    it('refuses a decision for a flow that has ended, and bad or foreign ids', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      await decideAll(runner, bob, first.fid, { approve: true });
      expect(refusal(await runner.decide({ id: first.fid, context: dave }))).toMatch(
        /has ended: there is nothing left to decide/,
      );
      expect(refusal(await runner.decide({ id: 'nope', context: bob }))).toBe('There is no request with that id.');
      expect(refusal(await runner.decide({ id: 'A'.repeat(22), context: bob }))).toBe(
        `There is no request ${'A'.repeat(22)}.`,
      );
      expect(refusal(await runner.decide({ id: first.fid, key: 'x'.repeat(99), context: bob }))).toMatch(
        /no decision with that key/,
      );
      expect(refusal(await runner.decide({ id: first.fid, key: 'other', context: bob }))).toMatch(/has ended/);
      expect(refusal(await runner.resume({ id: first.fid, context: bob }))).toMatch(/Only the requester may resume/);
      expect(refusal(await runner.withdraw({ id: 42 as unknown as string, context: bob }))).toBe(
        'There is no request with that id.',
      );
      expect(await runner.requests(bob)).toEqual([]);
    });
  });

  describe('resume', () => {
    it('continues a parked flow with a fresh in-call wait, its states bound to baton_resume', async () => {
      const runner = makeRunner();
      const first = await request(runner);
      const resumed = expectInput(await runner.resume({ id: first.fid, context: requester }));
      expect(resumed.inputRequests).toEqual({});
      // A resume state is not a state of the flow's own tool.
      await expect(
        runner.run({
          flow: 'expense_approval',
          args: args(250),
          context: requester,
          requestState: resumed.requestState,
        }),
      ).rejects.toBeInstanceOf(InvalidRequestStateError);
      await decideAll(runner, bob, first.fid, { approve: true });
      const done = await runner.resume({ id: first.fid, context: requester, requestState: resumed.requestState });
      expect(text(done)).toBe('Expense of 250 approved.');
    });
  });

  describe('hooks and audit', () => {
    it('calls onDecisionRequested and onDecided with hashed principals; a throwing hook is harmless', async () => {
      const requested: DecisionRequestedEvent[] = [];
      const decided: DecidedEvent[] = [];
      const logged: RunnerLogEvent[] = [];
      const runner = makeRunner({
        onDecisionRequested: (event) => {
          requested.push(event);
          throw new Error('webhook down');
        },
        onDecided: async (event) => {
          decided.push(event);
          await new Promise(() => {}); // never settles: must not block the round
        },
        log: (event) => logged.push(event),
      });
      const first = await request(runner, 2500);
      await request(runner, 10); // a second request: one more decision requested
      const recorded = await decideAll(runner, bob, first.fid, { approve: true });
      expect(text(recorded)).toMatch(/^Recorded/);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(requested.map((e) => e.key)).toEqual(['manager_approval', 'manager_approval', 'finance_approval']);
      expect(requested[0]).toMatchObject({
        id: first.fid,
        key: 'manager_approval',
        flow: 'expense_approval',
        role: 'manager',
        message: 'Approve an expense of 2500 for "conference"?',
        requestedAt: START,
        // Decidable by a manager until the escalation to a director (3 days).
        deadline: START + 3 * DAY,
      });
      expect(requested[0]!.requester).not.toBe('alice');
      expect(decided).toEqual([
        {
          id: first.fid,
          key: 'manager_approval',
          flow: 'expense_approval',
          decider: expect.any(String),
          decidedAt: START,
        },
      ]);
      expect(decided[0]!.decider).not.toBe('bob');
      expect(logged.filter((e) => e.type === 'hook_error')).toHaveLength(3);
      // Retrying a waiting round does not request (or announce) the decision again.
      await retry(runner, first, 2500);
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(requested).toHaveLength(3);
    });

    it('records each decision with its decider in the audit trail', async () => {
      const audit = createMemoryAuditLog();
      const codec = createRequestStateCodec({ keys, now });
      const runner = makeRunner({ audit, codec });
      const first = await request(runner);
      await decideAll(runner, bob, first.fid, { approve: true });
      const rounds = await audit.rounds(first.fid);
      const delivered = rounds.flatMap((r) => r.received).filter((a) => a.key === 'manager_approval');
      // expense_approval records values (auditValues): the decision's content is recorded too, with
      // when it was made and through which channel (schema 11); no name: names are not stored.
      expect(delivered).toEqual([
        {
          key: 'manager_approval',
          action: 'accept',
          decider: codec.digest('bob', 'audit-principal'),
          decidedAt: START,
          via: 'decide',
          value: { action: 'accept', content: { approve: true } },
        },
      ]);
      expect(rounds.at(-1)).toMatchObject({ outcome: 'complete', principal: codec.digest('bob', 'audit-principal') });
    });

    it("records every round that moves the instance, whoever's call ran it, under numbers of its own", async () => {
      const audit = createMemoryAuditLog();
      const codec = createRequestStateCodec({ keys, now });
      const runner = makeRunner({ audit, codec });
      const first = await request(runner);
      // The requester's held rounds go on while the request is parked at round 1 ...
      const second = expectInput(await retry(runner, first));
      expectInput(await retry(runner, second));
      // ... so the decider's round, numbered from the parked state, finds its number taken.
      expect(text(await decideAll(runner, bob, first.fid, { approve: true }))).toMatch(/^Recorded.*has ended/);
      expect(text(await runner.resume({ id: first.fid, context: requester }))).toBe('Expense of 250 approved.');

      const rounds = await audit.rounds(first.fid);
      const hash = (who: string) => codec.digest(who, 'audit-principal');
      expect(rounds.map((r) => [r.round, r.via, r.principal, r.outcome])).toEqual([
        [1, 'call', hash('alice'), 'input_required'],
        [2, 'call', hash('alice'), 'input_required'],
        [3, 'call', hash('alice'), 'input_required'],
        [4, 'decide', hash('bob'), 'complete'],
        [5, 'resume', hash('alice'), 'complete'],
      ]);
      // The decider's round took the transition; the resume found the flow ended, and moved nothing.
      expect(rounds[3]).toMatchObject({
        before: { deciding: 'manager' },
        after: 'approved',
        path: [{ deciding: 'manager' }, 'approved'],
      });
      expect(rounds[4]).toMatchObject({ before: null, after: null, path: [] });
    });

    it("numbers a held round before the decider's round that ended the flow meanwhile", async () => {
      const audit = createMemoryAuditLog();
      const codec = createRequestStateCodec({ keys, now });
      // Alice's first call holds its round open (polling the ledger) while bob decides.
      const runner = makeRunner({ audit, codec, holdMs: 20_000, pollMs: 5 });
      const held = runner.run({ flow: 'expense_approval', args: args(250), context: requester });
      const until = Date.now() + 10_000;
      while ((await runner.inbox(bob)).length === 0) {
        if (Date.now() > until) throw new Error('the request was not parked in time');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const id = (await runner.inbox(bob))[0]!.id;
      expect(text(await decideAll(runner, bob, id, { approve: true }))).toMatch(/^Recorded/);
      expect(text(await held)).toBe('Expense of 250 approved.');

      const rounds = await audit.rounds(id);
      expect(rounds.map((r) => [r.round, r.via, r.before, r.path, r.after])).toEqual([
        // Alice's round began first and parked the request; another call's round ended it.
        [1, 'call', null, [{ deciding: 'manager' }], null],
        [2, 'decide', { deciding: 'manager' }, [{ deciding: 'manager' }, 'approved'], 'approved'],
      ]);
    });

    it("records the requester's withdrawal as a round of its own", async () => {
      const audit = createMemoryAuditLog();
      const codec = createRequestStateCodec({ keys, now });
      const runner = makeRunner({ audit, codec });
      const first = await request(runner);
      expect(text(await runner.withdraw({ id: first.fid, context: requester }))).toMatch(/^Withdrawn/);
      const rounds = await audit.rounds(first.fid);
      expect(rounds.map((r) => [r.round, r.via, r.outcome, r.after])).toEqual([
        [1, 'call', 'input_required', { deciding: 'manager' }],
        [2, 'withdraw', 'complete', 'withdrawn'],
      ]);
      expect(rounds[1]!.principal).toBe(codec.digest('alice', 'audit-principal'));
    });
  });
});
