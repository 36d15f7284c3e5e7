/**
 * The flow test kit at work: rounds driven with a movable clock, coverage of
 * the states runs passed through (transient `always` states included: the
 * kit records every microstep), shortest paths from the input catalog, and
 * raw answers a flow refuses.
 */

import { createMemoryLedger } from '@baton/store';
import { describe, expect, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import { ask, defineFlow, defineInputs, form, type InputEvents, type RoundOutcome } from '../src/index.js';
import { accept, allStates, createFlowTester, decline, flowPaths, unvisitedStates } from '../src/testing/index.js';
import { deployFlow } from './fixtures/deployFlow.js';

const routeInputs = defineInputs({
  size: form({ message: 'How many?', schema: z.object({ count: z.number().int().min(1).max(10) }) }),
});
/** A flow that routes an answer through a transient `always` state. */
const routed = defineFlow({
  name: 'routed',
  description: 'routes through an always state',
  args: z.object({}),
  inputs: routeInputs,
  machine: setup({
    types: { context: {} as { count: number }, events: {} as InputEvents<typeof routeInputs> },
  }).createMachine({
    id: 'routed',
    context: { count: 0 },
    initial: 'asking',
    states: {
      asking: {
        meta: ask(routeInputs, 'size'),
        on: {
          'input.size': {
            target: 'routing',
            actions: ({ context, event }) => {
              if (event.action === 'accept') context.count = event.content.count;
            },
          },
        },
      },
      routing: { always: [{ guard: ({ context }) => context.count > 5, target: 'big' }, { target: 'small' }] },
      big: { type: 'final' },
      small: { type: 'final' },
    },
  }),
});

/** A flow whose initial state is transient: left at once by `always`. */
const startsRouting = defineFlow({
  name: 'starts_routing',
  description: 'starts in an always state',
  args: z.object({}).strict(),
  inputs: defineInputs({}),
  machine: setup({}).createMachine({
    id: 'starts_routing',
    initial: 'routing',
    states: {
      routing: { always: [{ guard: () => false, target: 'big' }, { target: 'small' }] },
      big: { type: 'final' },
      small: { type: 'final' },
    },
  }),
});

describe('the flow test kit', () => {
  it('drives a flow round by round and moves the clock', async () => {
    const tester = createFlowTester(deployFlow);
    const run = await tester.start({ version: '7.0.0' });
    expect(run.status).toBe('input_required');
    expect(run.asked).toEqual(['confirm_deploy', 'change_ticket']);
    expect(run.request('confirm_deploy')).toMatchObject({ params: { message: expect.stringContaining('7.0.0') } });
    await run.answer({ confirm_deploy: accept({ confirm: true }) });
    expect(run.asked).toEqual(['change_ticket']);
    await tester.clock.advance(16 * 60_000);
    await run.answer({ change_ticket: accept({ ticket: 'CHG-5' }) });
    expect(run.status).toBe('complete');
    expect(run.text).toBe('Approval for 7.0.0 expired');
    expect(run.outcomes).toHaveLength(3);
  });

  it('reports which states no test reached', async () => {
    const tester = createFlowTester(deployFlow);
    const run = await tester.start({ version: '1.0.0' });
    await run.answer({ confirm_deploy: decline(), change_ticket: decline() });
    expect(run.text).toContain('cancelled');
    const missing = unvisitedStates(deployFlow, tester.visited);
    expect(missing).toEqual(['deploy.confirmed', 'deploy.deployed', 'deploy.expired']);
    const second = await tester.start({ version: '1.0.1' });
    await second.answer({ confirm_deploy: accept({ confirm: true }), change_ticket: accept({ ticket: 'CHG-2' }) });
    expect(unvisitedStates(deployFlow, tester.visited)).toEqual(['deploy.expired']);
  });

  it('derives a path to every state from the input catalog', () => {
    const paths = flowPaths(deployFlow, {
      input: { version: '1' },
      answers: {
        confirm_deploy: [{ action: 'accept', content: { confirm: true } }],
        change_ticket: [{ action: 'accept', content: { ticket: 'CHG-1' } }],
      },
      invokeOutputs: { plan: 'plan text' },
    });
    const reached = new Set(paths.map((p) => JSON.stringify(p.state)));
    for (const state of ['"planning"', '"awaiting"', '"confirmed"', '"deployed"', '"cancelled"']) {
      expect(reached.has(state)).toBe(true);
    }
    const toDeployed = paths.find((p) => p.state === 'deployed')!;
    expect(toDeployed.events.map((e) => e.type)).toEqual([
      'xstate.done.actor.plan',
      'input.confirm_deploy',
      'input.change_ticket',
    ]);
    expect(allStates(deployFlow)).toContain('deploy.expired');
  });

  it('counts a transient always state as visited', async () => {
    const tester = createFlowTester(routed);
    const run = await tester.start({});
    await run.answer({ size: accept({ count: 7 }) });
    expect(run.status).toBe('complete');
    expect(tester.visited).toContainEqual('routing');
    expect(unvisitedStates(routed, tester.visited)).toEqual(['routed.small']);
  });

  it('counts an initial transient state as visited (left at once by always)', async () => {
    const tester = createFlowTester(startsRouting);
    await tester.start({});
    expect(tester.visited[0]).toBe('routing');
    expect(unvisitedStates(startsRouting, tester.visited)).toEqual(['starts_routing.big']);
    // A start refused for its arguments entered no state.
    const refused = createFlowTester(startsRouting);
    await refused.startRaw({ unexpected: 1 });
    expect(refused.visited).toEqual([]);
  });

  it('sends raw answers, re-asked with the reason', async () => {
    const tester = createFlowTester(routed);
    const run = await tester.startRaw({});
    await run.answerRaw({ size: { action: 'accept', content: { count: 'seven' } } });
    expect(run.asked).toEqual(['size']);
    expect(run.request('size')).toMatchObject({ params: { message: expect.stringContaining('count: ') } });
  });

  describe('decisions', () => {
    const start = (tester: ReturnType<typeof expenseTester>, amount = 250) =>
      tester.start({ amount, purpose: 'books' });
    const expenseTester = () =>
      createFlowTester(expenseApproval, { ledger: createMemoryLedger(), principal: 'alice', roles: ['manager'] });
    const text = (o: RoundOutcome) =>
      o.type === 'error'
        ? o.message
        : o.type === 'complete'
          ? String((o.result.content[0] as { text?: string } | undefined)?.text)
          : '';

    it('decides as someone else with the role; the requester sees it on its next round', async () => {
      const tester = expenseTester();
      const run = await start(tester, 2000);
      expect(run.status).toBe('input_required');
      expect(run.asked).toEqual([]); // retry later: nothing for the caller to answer
      const recorded = await run.decide('manager_approval', { approve: true }, { principal: 'bob' });
      expect(text(recorded)).toMatch(/^Recorded manager_approval/);
      // Finance next: a manager may not make it, finance may.
      const wrongRole = await run.decide(
        'finance_approval',
        { approve: true },
        { principal: 'bob', roles: ['manager'] },
      );
      expect(text(wrongRole)).toMatch(/needs the role "finance"/);
      expect(text(await run.decide('finance_approval', { approve: true }, { principal: 'carol' }))).toMatch(
        /^Recorded/,
      );
      await run.answer({});
      expect(run.text).toBe('Expense of 2000 approved.');
      expect(tester.visited).toContainEqual('finance');
    });

    it('honours four eyes: the requester never decides, whatever its roles', async () => {
      const run = await start(expenseTester());
      const own = await run.decide('manager_approval', { approve: true }, { principal: 'alice', roles: ['manager'] });
      expect(own.type).toBe('error');
      expect(text(own)).toMatch(/four eyes/);
    });

    it('says how to read the outcome when a test answers a state that expired', async () => {
      const tester = expenseTester();
      const run = await start(tester);
      await tester.clock.advance(8 * 24 * 3600_000); // past the 7-day window: the run expired meanwhile
      await expect(run.answer({})).rejects.toMatchObject({
        message: "this state expired; call `run.resume()` to read the flow's outcome",
        reason: 'expired',
      });
      await run.resume();
      expect(run.text).toBe('Expense of 250 expired: no decision within 7 days.');
      // Without a ledger there is nothing to resume: the sentence says so.
      const bare = createFlowTester(deployFlow);
      const waiting = await bare.start({ version: '1' });
      await bare.clock.advance(3 * 24 * 3600_000);
      await expect(waiting.answer({ confirm_deploy: accept({ confirm: true }) })).rejects.toThrow(
        /^this state expired; without a ledger the run cannot be resumed/,
      );
    });

    it('re-asks a refused decision saying why (decideRaw), and resumes a run that waits', async () => {
      const tester = expenseTester();
      const run = await start(tester);
      const again = await run.decideRaw('manager_approval', { approve: 'yes' });
      expect(again.type).toBe('input_required');
      expect(JSON.stringify(again)).toMatch(/not accepted \(approve: /);
      // Three "retry later" rounds, then the complete "waiting" result.
      for (let i = 0; i < 3 && run.status === 'input_required'; i++) await run.answer({});
      expect(run.text).toMatch(/^Waiting for a decision/);
      await run.decide('manager_approval', { approve: false });
      await run.resume();
      expect(run.text).toBe('Expense of 250 rejected by manager.');
    });
  });
});
