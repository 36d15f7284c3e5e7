/**
 * Type tests of the flow test kit, checked by `pnpm typecheck` (and run by
 * vitest): `start()` takes the args schema's input, `answer()` each input's
 * wire answer (a form's content by its zod schema, so an impossible enum
 * value does not compile), `decide()` each decision's content by its schema,
 * step stubs their step's input and output, and unknown keys are refused. Each `@ts-expect-error` line fails the typecheck
 * if the kit stops refusing it.
 */

import { describe, expect, expectTypeOf, it } from 'vitest';
import { setup } from 'xstate';
import { z } from 'zod';
import { expenseApproval } from '../../../examples/approvals/expenseApproval.js';
import { ask, defineFlow, defineInputs, form, type InputEvents, roots, sampling, step, url } from '../src/index.js';
import {
  accept,
  cancel,
  createFlowTester,
  type DecisionContentOf,
  type DecisionKeys,
  decline,
  type WireAnswerOf,
} from '../src/testing/index.js';
import { deployFlow, type deployInputs } from './fixtures/deployFlow.js';

const inputs = defineInputs({
  level: form({
    message: 'Level?',
    schema: z.object({ level: z.enum(['low', 'high']), note: z.string().max(9).optional() }),
  }),
  login: url({ message: 'Sign in', url: 'https://example.test/login' }),
  summary: sampling({ params: { messages: [], maxTokens: 10 } }),
  workspace: roots(),
});

const issue = step('issue', async ({ input }: { input: { amount: number } }) => `RF-${input.amount}`);

const typedFlow = defineFlow({
  name: 'typed_flow',
  description: 'type tests only',
  args: z.object({ amount: z.number(), currency: z.string().default('EUR') }),
  inputs,
  machine: setup({
    types: { input: {} as { amount: number; currency: string }, events: {} as InputEvents<typeof inputs> },
    actors: { issue },
  }).createMachine({
    initial: 'asking',
    states: { asking: { meta: ask(inputs, 'level'), on: { 'input.level': 'done' } }, done: { type: 'final' } },
  }),
});

describe('the typed test kit', () => {
  it('types start() by the args schema input', () => {
    const tester = createFlowTester(typedFlow);
    expectTypeOf(tester.start).parameter(0).toEqualTypeOf<{ amount: number; currency?: string | undefined }>();
    // @ts-expect-error a wrong argument type
    void (() => tester.start({ amount: 'ten' }));
    // @ts-expect-error a missing argument
    void (() => tester.start({}));
    void (() => tester.startRaw({ amount: 'ten' }));
  });

  it('types answer() by each input', async () => {
    const tester = createFlowTester(typedFlow);
    type Answer = Parameters<Awaited<ReturnType<typeof tester.start>>['answer']>[0];
    expectTypeOf<Answer['level']>().toEqualTypeOf<
      | { action: 'accept'; content: { level: 'low' | 'high'; note?: string | undefined } }
      | { action: 'decline' }
      | { action: 'cancel' }
      | undefined
    >();
    expectTypeOf<WireAnswerOf<(typeof inputs)['login']>>().toEqualTypeOf<
      { action: 'accept' } | { action: 'decline' } | { action: 'cancel' }
    >();
    expectTypeOf<Answer['summary']>().toMatchTypeOf<{ model: string } | undefined>();
    expectTypeOf<Answer['workspace']>().toEqualTypeOf<{ roots: { uri: string; name?: string }[] } | undefined>();
    const answers = (run: Awaited<ReturnType<typeof tester.start>>) => [
      run.answer({ level: accept({ level: 'high' }), login: accept(), workspace: { roots: [{ uri: 'file:///w' }] } }),
      run.answer({ level: decline(), login: cancel() }),
      run.answer({ summary: { role: 'assistant', content: { type: 'text', text: 'hi' }, model: 'm' } }),
      // @ts-expect-error an impossible enum value
      run.answer({ level: accept({ level: 'medium' }) }),
      // @ts-expect-error a field of the wrong type
      run.answer({ level: accept({ level: 'low', note: 3 }) }),
      // @ts-expect-error a form answer without content
      run.answer({ level: accept() }),
      // @ts-expect-error an unknown key
      run.answer({ levle: decline() }),
      // @ts-expect-error a sampling answer without a model
      run.answer({ summary: { role: 'assistant', content: { type: 'text', text: 'hi' } } }),
      run.answerRaw({ level: accept({ level: 'medium' }), levle: 1 }),
      // @ts-expect-error an unknown key
      run.request('levle'),
      run.request('login'),
    ];
    expectTypeOf(answers).toBeFunction();
    const deploy = createFlowTester(deployFlow);
    // @ts-expect-error the fixture's ticket is a string, its confirmation a boolean
    void (() => deploy.start({ version: 1 }).then((run) => run.answer({ confirm_deploy: accept({ confirm: 'yes' }) })));
    expectTypeOf<WireAnswerOf<(typeof deployInputs)['change_ticket']>>().toEqualTypeOf<
      { action: 'accept'; content: { ticket: string } } | { action: 'decline' } | { action: 'cancel' }
    >();
  });

  it('types step stubs by the step', () => {
    createFlowTester(typedFlow, { steps: { issue: async ({ input }) => `RF-${input.amount.toFixed(2)}` } });
    // @ts-expect-error the step returns a string
    createFlowTester(typedFlow, { steps: { issue: async () => 42 } });
    // @ts-expect-error an unknown step id (refused at run time too)
    expect(() => createFlowTester(typedFlow, { steps: { isue: async () => 'RF' } })).toThrow('has no step "isue"');
  });

  it('types decide() by each decision, and keeps decisions out of answer()', () => {
    const tester = createFlowTester(expenseApproval);
    type Run = Awaited<ReturnType<typeof tester.start>>;
    type Inputs = typeof expenseApproval.inputs;
    expectTypeOf<DecisionKeys<Inputs>>().toEqualTypeOf<'manager_approval' | 'director_approval' | 'finance_approval'>();
    expectTypeOf<DecisionContentOf<Inputs['manager_approval']>>().toEqualTypeOf<{
      approve: boolean;
      comment?: string | undefined;
    }>();
    const decisions = (run: Run) => [
      run.decide('manager_approval', { approve: true }),
      run.decide(
        'finance_approval',
        { approve: false, comment: 'over budget' },
        { principal: 'carol', roles: ['finance'] },
      ),
      // @ts-expect-error an impossible value: approve is a boolean
      run.decide('manager_approval', { approve: 'yes' }),
      // @ts-expect-error a missing field
      run.decide('manager_approval', { comment: 'fine' }),
      // @ts-expect-error an unknown decision key
      run.decide('ceo_approval', { approve: true }),
      // @ts-expect-error a decider's principal is a string
      run.decide('manager_approval', { approve: true }, { principal: 7 }),
      // @ts-expect-error the caller never answers a decision
      run.answer({ manager_approval: accept({ approve: true }) }),
      run.decideRaw('manager_approval', { approve: 'yes' }),
      run.answer({}),
      run.resume(),
    ];
    expectTypeOf(decisions).toBeFunction();
    // A flow without decisions has no decision keys.
    const typed = createFlowTester(typedFlow);
    // @ts-expect-error typed_flow has no decisions
    void (() => typed.start({ amount: 1 }).then((run) => run.decide('level', { level: 'low' })));
  });
});
