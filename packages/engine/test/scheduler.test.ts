/**
 * The scheduler's fire (`runner.fireDueTimers()`), on the memory ledger and
 * on SQLite: a parked instance whose deadline passed ends with no client
 * through its own timeout branch (status `completed`: the flow handled it;
 * `expired` only when the round that fired it failed), its pending decision out of the inbox, audited
 * `via: 'timer'`); the requester's later `baton_resume` sees the outcome; a
 * timer claimed by one runner is not fired by a second; an `after` reminder
 * with `notify()` and an escalation move the decision to another role; and
 * the outbox holds `decision.requested`, `flow.notification` and one
 * `request.ended` with the contract's body.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryAuditLog, createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  decision,
  defineFlow,
  defineInputs,
  type FullLedger,
  generateKey,
  type InputEvents,
  notify,
} from '../src/index.js';
import { createFlowTester } from '../src/testing/index.js';

const keys = [generateKey()];
const DAY = 24 * 3600 * 1000;
const alice: CallContext = { principal: 'alice', method: 'tools/call', target: 'expense_approval' };
const dir = mkdtempSync(join(tmpdir(), 'baton-scheduler-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let made = 0;
const LEDGERS: Record<string, () => FullLedger> = {
  memory: () => createMemoryLedger({ pruneIntervalMs: 0 }),
  sqlite: () => createSqliteLedger({ path: join(dir, `ledger-${++made}.db`), pruneIntervalMs: 0 }),
};

const verdict = z.object({ approve: z.boolean() });
const escalating = defineInputs({
  manager_approval: decision({ message: 'Approve?', schema: verdict, role: 'manager' }),
  director_approval: decision({ message: 'Approve (escalated)?', schema: verdict, role: 'director' }),
});
const escalation = defineFlow({
  name: 'escalating',
  description: 'A decision that reminds, then escalates.',
  args: z.object({}),
  inputs: escalating,
  machine: setup({ types: { events: {} as InputEvents<typeof escalating> } }).createMachine({
    id: 'escalating',
    initial: 'manager',
    states: {
      manager: {
        meta: ask(escalating, 'manager_approval'),
        after: {
          [1 * DAY]: { actions: notify({ kind: 'reminder', to: 'manager' }) },
          [3 * DAY]: { target: 'director', actions: notify({ kind: 'escalated', to: 'director' }) },
        },
        on: { 'input.manager_approval': 'done' },
      },
      director: {
        meta: ask(escalating, 'director_approval'),
        after: { [4 * DAY]: 'expired' },
        on: { 'input.director_approval': 'done' },
      },
      done: { type: 'final', output: () => 'decided' },
      expired: { type: 'final', output: () => 'expired' },
    },
  }),
});

const fragileInputs = defineInputs({
  sign_off: decision({ message: 'Sign off?', schema: verdict, role: 'manager' }),
});
/** A flow whose timeout branch fails: its deadline passes and the flow cannot handle it. */
const fragile = defineFlow({
  name: 'fragile',
  description: 'A deadline the flow fails to handle.',
  args: z.object({}),
  inputs: fragileInputs,
  machine: setup({ types: { events: {} as InputEvents<typeof fragileInputs> } }).createMachine({
    id: 'fragile',
    initial: 'waiting',
    states: {
      waiting: { meta: ask(fragileInputs, 'sign_off'), after: { [DAY]: 'timedOut' }, on: { 'input.sign_off': 'done' } },
      timedOut: {
        entry: () => {
          throw new Error('the timeout branch is broken');
        },
        type: 'final',
      },
      done: { type: 'final' },
    },
  }),
});

describe.each(Object.keys(LEDGERS))('scheduler on %s', (name) => {
  it('calls a request expired only when its deadline passed and the flow could not handle it', async () => {
    const ledger = LEDGERS[name]!();
    const tester = createFlowTester(fragile, { ledger, principal: 'alice' });
    const run = await tester.start({});
    await tester.clock.advance(DAY + 1000);
    expect((await ledger.requests.getRequest(run.outcome.fid))?.status).toBe('expired');
    expect((await tester.notifications()).at(-1)).toMatchObject({
      type: 'request.ended',
      data: { requestId: run.outcome.fid, status: 'expired' },
    });
    // A flow that handled its deadline (expense_approval's own "expired" final state) completed.
    const handled = createFlowTester(expenseApproval, { ledger, principal: 'alice' });
    const expense = await handled.start({ amount: 50, purpose: 'books' });
    await handled.clock.advance(8 * DAY);
    await expense.resume();
    expect(expense.text).toBe('Expense of 50 expired: no decision within 7 days.');
    expect((await ledger.requests.getRequest(expense.outcome.fid))?.status).toBe('completed');
    await ledger.close();
  });

  const setupRunner = (ledger: FullLedger, clock: { now: number }) => {
    const audit = createMemoryAuditLog();
    const now = () => clock.now;
    const runner = createRunner({
      flows: [expenseApproval, escalation],
      codec: createRequestStateCodec({ keys, now }),
      now,
      ledger,
      audit,
      outbox: true,
      holdMs: 5,
      pollMs: 1,
      waitInCallSeconds: 0,
    });
    return { runner, audit };
  };
  const outbox = async (ledger: FullLedger, at: number) =>
    (await ledger.outbox.claimOutbox({ now: at, leaseUntil: at + 1, limit: 100 })).map((m) => JSON.parse(m.body));

  it('ends a deadline with no client through its timeout branch: completed, out of the inbox, audited via timer, seen on resume', async () => {
    const ledger = LEDGERS[name]!();
    const start = Date.UTC(2026, 11, 1, 9);
    const clock = { now: start };
    const { runner, audit } = setupRunner(ledger, clock);
    const first = await runner.run({
      flow: 'expense_approval',
      args: { amount: 50, purpose: 'books' },
      context: alice,
    });
    expect(first.type).toBe('complete');
    const id = (first as unknown as { result: { structuredContent: { id: string } } }).result.structuredContent.id;
    // expense_approval's timers: the reminder (24 h), the escalation (3 days), the window (7 days).
    expect((await ledger.requests.getRequest(id))?.dueAt).toBe(start + DAY);
    expect(await runner.inbox({ principal: 'bob', roles: ['manager'] })).toHaveLength(1);

    // Not yet due: nothing happens.
    clock.now = start + DAY - 1000;
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 0, fired: 0 });
    clock.now = start + DAY;
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 1, fired: 1 });
    expect((await ledger.requests.getRequest(id))?.dueAt).toBe(start + 3 * DAY);
    clock.now = start + 3 * DAY;
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 1, fired: 1 });
    expect((await ledger.requests.getRequest(id))?.dueAt).toBe(start + 7 * DAY);
    expect(await runner.inbox({ principal: 'bob', roles: ['manager'] })).toEqual([]);
    expect(await runner.inbox({ principal: 'dan', roles: ['director'] })).toHaveLength(1);
    clock.now = start + 7 * DAY + 1000;
    // A second runner on the same ledger: of the two, one fires it.
    const other = setupRunner(ledger, clock).runner;
    const [a, b] = await Promise.all([runner.fireDueTimers(), other.fireDueTimers()]);
    expect(a.fired + b.fired).toBe(1);
    expect([...a.lagMs, ...b.lagMs][0]).toBe(1000);

    const row = await ledger.requests.getRequest(id);
    // The flow handled its deadline (`after` to its own "expired" final state): completed.
    expect(row).toMatchObject({ status: 'completed', dueAt: null });
    expect(await runner.inbox({ principal: 'dan', roles: ['director'] })).toEqual([]);
    expect((await ledger.decisions.listDecisions({ id })).map((d) => d.status)).toEqual(['closed', 'closed']);
    const entries = await audit.rounds(id);
    expect(entries.at(-1)).toMatchObject({ via: 'timer', outcome: 'complete', after: 'expired' });
    // The reminder acts in place, the escalation moves the decision: both recorded, with no client.
    expect(entries.filter((e) => e.via === 'timer').map((e) => [e.before, e.after])).toEqual([
      [{ deciding: 'manager' }, { deciding: 'manager' }],
      [{ deciding: 'manager' }, { deciding: 'director' }],
      [{ deciding: 'director' }, 'expired'],
    ]);

    const resumed = await runner.resume({ id, context: { principal: 'alice' } });
    expect(JSON.stringify(resumed)).toContain('expired: no decision within 7 days');
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 0 });

    const sent = await outbox(ledger, clock.now);
    expect(sent.map((m) => [m.type, m.data.key ?? m.data.kind ?? m.data.status])).toEqual([
      ['decision.requested', 'manager_approval'],
      ['flow.notification', 'reminder'],
      ['decision.requested', 'director_approval'],
      ['flow.notification', 'escalated'],
      ['flow.notification', 'expired'],
      ['request.ended', 'completed'],
    ]);
    expect(sent[0]).toMatchObject({
      type: 'decision.requested',
      data: { requestId: id, flow: 'expense_approval', key: 'manager_approval', role: 'manager' },
    });
    // The manager's decision is decidable until the escalation takes it away.
    expect(sent[0].data.deadline).toBe(new Date(start + 3 * DAY).toISOString());
    expect(sent[2].data).toMatchObject({ role: 'director', deadline: new Date(start + 7 * DAY).toISOString() });
    expect(sent[4].data).toMatchObject({ to: 'requester', data: { amount: 50, purpose: 'books' } });
    expect(sent[5]).toMatchObject({ type: 'request.ended', data: { requestId: id, status: 'completed' } });
    expect(sent[5].data.requester).not.toContain('alice');
    await ledger.close();
  });

  it('reminds after a day, then escalates to the director: out of the manager’s inbox, into the director’s', async () => {
    const ledger = LEDGERS[name]!();
    const clock = { now: Date.UTC(2026, 11, 1, 9) };
    const { runner, audit } = setupRunner(ledger, clock);
    const first = await runner.run({
      flow: 'escalating',
      args: {},
      context: { ...alice, target: 'escalating' },
    });
    const id = (first as unknown as { result: { structuredContent: { id: string } } }).result.structuredContent.id;
    const start = clock.now;
    clock.now = start + DAY + 1;
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 1, fired: 1 });
    expect((await ledger.requests.getRequest(id))?.dueAt).toBe(start + 3 * DAY);
    expect(await runner.inbox({ principal: 'bob', roles: ['manager'] })).toHaveLength(1);
    clock.now = start + 3 * DAY + 1;
    expect(await runner.fireDueTimers()).toMatchObject({ claimed: 1, fired: 1 });
    expect(await runner.inbox({ principal: 'bob', roles: ['manager'] })).toEqual([]);
    expect((await runner.inbox({ principal: 'dan', roles: ['director'] })).map((i) => i.key)).toEqual([
      'director_approval',
    ]);
    const refused = await runner.decide({
      id,
      key: 'manager_approval',
      context: { principal: 'bob', roles: ['manager'] },
    });
    expect(refused.type).toBe('error');
    const entries = await audit.rounds(id);
    expect(entries.filter((e) => e.via === 'timer').map((e) => e.after)).toEqual(['manager', 'director']);
    const kinds = (await outbox(ledger, clock.now))
      .filter((m) => m.type === 'flow.notification')
      .map((m) => [m.data.kind, m.data.to]);
    expect(kinds).toEqual([
      ['reminder', 'manager'],
      ['escalated', 'director'],
    ]);
    await ledger.close();
  });
});

describe('the test kit fires due timers as the scheduler would', () => {
  it('reminds, then escalates, with the clock moved and no round from the requester', async () => {
    const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
    const tester = createFlowTester(escalation, { ledger, startAt: Date.UTC(2026, 11, 1, 9) });
    const run = await tester.start({});
    expect(run.status).toBe('input_required');
    await tester.clock.advance(DAY + 1);
    expect((await tester.notifications()).map((n) => [n.type, n.data.kind])).toEqual([
      ['decision.requested', undefined],
      ['flow.notification', 'reminder'],
    ]);
    await tester.clock.advance(2 * DAY);
    const sent = await tester.notifications();
    expect(sent.map((n) => [n.type, n.data.key ?? n.data.kind])).toEqual([
      ['decision.requested', 'manager_approval'],
      ['flow.notification', 'reminder'],
      ['decision.requested', 'director_approval'],
      ['flow.notification', 'escalated'],
    ]);
    expect(sent[2]!.data).toMatchObject({ role: 'director' });
    await tester.clock.advance(4 * DAY);
    expect((await tester.notifications()).at(-1)).toMatchObject({
      type: 'request.ended',
      data: { status: 'completed' },
    });
    await ledger.close();
  });

  it('expense_approval: the manager is reminded after 24 h, a director gets it after 3 days, the requester hears the end', async () => {
    const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
    const tester = createFlowTester(expenseApproval, { ledger, principal: 'alice', startAt: Date.UTC(2026, 11, 1, 9) });
    const run = await tester.start({ amount: 80, purpose: 'train' });
    expect(run.status).toBe('input_required');
    const kinds = async () =>
      (await tester.notifications()).map((n) => [n.type, n.data.key ?? n.data.kind ?? n.data.status, n.data.to]);
    // Not yet: a minute before the day is out, nothing but the request.
    await tester.clock.advance(DAY - 60_000);
    expect(await kinds()).toEqual([['decision.requested', 'manager_approval', undefined]]);
    await tester.clock.advance(60_000);
    expect((await kinds()).at(-1)).toEqual(['flow.notification', 'reminder', 'manager']);
    // The reminder leaves the decision with the manager ...
    expect((await tester.notifications()).filter((n) => n.data.kind === 'reminder')).toHaveLength(1);
    await tester.clock.advance(2 * DAY - 60_000);
    expect((await kinds()).at(-1)).toEqual(['flow.notification', 'reminder', 'manager']);
    // ... until the escalation at 3 days moves it to a director.
    await tester.clock.advance(60_000);
    expect((await kinds()).slice(2)).toEqual([
      ['decision.requested', 'director_approval', undefined],
      ['flow.notification', 'escalated', 'director'],
    ]);
    expect(
      await run.decide('manager_approval', { approve: true }, { principal: 'bob', roles: ['manager'] }),
    ).toMatchObject({
      type: 'error',
    });
    const decided = await run.decide('director_approval', { approve: true }, { principal: 'dan', roles: ['director'] });
    expect(decided.type).toBe('complete');
    expect(await run.resume()).toMatchObject({ type: 'complete' });
    expect(run.text).toBe('Expense of 80 approved.');
    expect((await kinds()).slice(4)).toEqual([
      ['decision.made', 'director_approval', undefined],
      ['flow.notification', 'approved', 'requester'],
      ['request.ended', 'completed', undefined],
    ]);
    expect(tester.visited).toContainEqual({ deciding: 'director' });
    await ledger.close();
  });
});
