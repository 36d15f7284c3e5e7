/**
 * Tasks of flows whose work is durable steps, through the real runner on the memory ledger
 * and a SQLite file: a call that declared the tasks extension is answered with the task once
 * only durable steps are left running (`TASK_AFTER_MS`), not after the round budget; a
 * `tasks/cancel` reaches a flow while its step still runs (the withdrawal is delivered, the
 * task reads `cancelled`), and a cancel of an ended task is `ended`; a flow that fails (a
 * step's error no state handles) reads `failed` with a JSON-RPC error; two questions asked at
 * once answered one `tasks/update` at a time: the answered one leaves, the other keeps its key,
 * and the flow goes on once both are in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMemoryLedger } from '@baton/store';
import { createSqliteLedger } from '@baton/store/better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { assign, setup } from 'xstate';
import { z } from 'zod';
import {
  ask,
  type CallContext,
  createRequestStateCodec,
  createRunner,
  defineFlow,
  defineInputs,
  FlowError,
  type FullLedger,
  form,
  generateKey,
  type InputEvents,
  step,
  taskOf,
  type WithdrawEvent,
} from '../src/index.js';

const codec = createRequestStateCodec({ keys: [generateKey()] });
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const pause = step('pause', async ({ input }: { input: { ms: number } }) => {
  await new Promise((resolve) => setTimeout(resolve, input.ms));
  return input.ms;
});

/** Works for `ms` in a durable step; withdrawable meanwhile. */
const slow = defineFlow({
  name: 'slow',
  description: 'Works, then answers.',
  args: z.object({ ms: z.number() }),
  inputs: {},
  machine: setup({
    types: { input: {} as { ms: number }, events: {} as WithdrawEvent },
    actors: { pause },
  }).createMachine({
    id: 'slow',
    context: ({ input }) => ({ ms: input.ms }),
    initial: 'working',
    states: {
      working: {
        invoke: { id: 'pause', src: 'pause', input: ({ context }) => ({ ms: context.ms }), onDone: 'done' },
        on: { 'baton.withdraw': 'withdrawn' },
      },
      done: { type: 'final', output: 'Done.' },
      withdrawn: { type: 'final', output: 'Withdrawn.' },
    },
  }),
});

const crash = step('crash', async () => {
  await new Promise((resolve) => setTimeout(resolve, 600));
  throw new FlowError('The worker crashed.');
});

/** A step whose error nothing handles: the flow fails. */
const crashing = defineFlow({
  name: 'crashing',
  description: 'Fails.',
  args: z.object({}),
  inputs: {},
  machine: setup({ actors: { crash } }).createMachine({
    id: 'crashing',
    initial: 'working',
    states: { working: { invoke: { id: 'crash', src: 'crash' } } },
  }),
});

const twoInputs = defineInputs({
  name: form({ message: 'Name?', schema: z.object({ name: z.string() }) }),
  confirm: form({ message: 'Go?', schema: z.object({ confirm: z.boolean() }) }),
});

/** Prepares in a step, then asks two questions at once. */
const twoQuestions = defineFlow({
  name: 'two_questions',
  description: 'Asks two things at once.',
  args: z.object({}),
  inputs: twoInputs,
  machine: setup({
    types: { context: {} as { name?: string; go?: boolean }, events: {} as InputEvents<typeof twoInputs> },
    actors: { pause },
  }).createMachine({
    id: 'two_questions',
    context: {},
    initial: 'preparing',
    states: {
      preparing: { invoke: { id: 'pause', src: 'pause', input: { ms: 700 }, onDone: 'asking' } },
      asking: {
        type: 'parallel',
        onDone: 'done',
        states: {
          a: {
            initial: 'q',
            states: {
              q: {
                meta: ask(twoInputs, 'name'),
                on: {
                  'input.name': {
                    target: 'ok',
                    actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : '') }),
                  },
                },
              },
              ok: { type: 'final' },
            },
          },
          b: {
            initial: 'q',
            states: {
              q: {
                meta: ask(twoInputs, 'confirm'),
                on: {
                  'input.confirm': {
                    target: 'ok',
                    actions: assign({ go: ({ event }) => event.action === 'accept' && event.content.confirm }),
                  },
                },
              },
              ok: { type: 'final' },
            },
          },
        },
      },
      done: { type: 'final', output: ({ context }) => `${context.name}: ${context.go ? 'go' : 'stop'}` },
    },
  }),
});

const ledgers: [string, () => FullLedger][] = [
  ['memory', () => createMemoryLedger()],
  [
    'SQLite',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'baton-task-steps-'));
      dirs.push(dir);
      return createSqliteLedger({ path: join(dir, 'ledger.db') });
    },
  ],
];

const tasksCall = (target: string): CallContext => ({
  principal: 'alice',
  method: 'tools/call',
  target,
  capabilities: { form: true },
  tasks: true,
});
const caller = { principal: 'alice', roles: [], capabilities: { form: true } };

const until = async <T>(probe: () => Promise<T | undefined>): Promise<T> => {
  const end = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

describe.each(ledgers)('tasks of durable steps on the %s ledger', (_name, open) => {
  const runner = createRunner({ flows: [slow, crashing, twoQuestions], codec, ledger: open() });

  it('a tasks call is answered with the task once only steps run, not after the budget', async () => {
    const started = Date.now();
    const outcome = await runner.run({ flow: 'slow', args: { ms: 5000 }, context: tasksCall('slow') });
    expect(Date.now() - started).toBeLessThan(2000);
    const task = taskOf(outcome);
    expect(task).toMatchObject({ status: 'working', statusMessage: 'Working: pause running.' });
    // Withdrawn while its step still runs: delivered, the task reads cancelled at once.
    const cancelStarted = Date.now();
    expect(await runner.tasks.cancel({ id: task!.id, context: caller })).toEqual({ type: 'cancelled' });
    expect(Date.now() - cancelStarted).toBeLessThan(2000);
    expect(await runner.tasks.get({ id: task!.id, context: caller })).toMatchObject({ status: 'cancelled' });
    // A cancel of an ended task: nothing to do, said so (the adapters acknowledge it).
    expect(await runner.tasks.cancel({ id: task!.id, context: caller })).toEqual({ type: 'ended' });
  });

  it('a fast step answers in the call, no task', async () => {
    const outcome = await runner.run({ flow: 'slow', args: { ms: 10 }, context: tasksCall('slow') });
    expect(taskOf(outcome)).toBeUndefined();
    expect(outcome).toMatchObject({ type: 'complete', result: { content: [{ type: 'text', text: 'Done.' }] } });
  });

  it('a flow that fails reads failed, with a JSON-RPC error and no result', async () => {
    const task = taskOf(await runner.run({ flow: 'crashing', args: {}, context: tasksCall('crashing') }))!;
    const failed = await until(async () => {
      const got = await runner.tasks.get({ id: task.id, context: caller });
      return got?.status === 'working' ? undefined : got;
    });
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, message: expect.any(String) } });
    expect(failed).not.toHaveProperty('result');
  });

  it('two questions answered one tasks/update at a time: the other keeps its key', async () => {
    const task = taskOf(await runner.run({ flow: 'two_questions', args: {}, context: tasksCall('two_questions') }))!;
    const asking = await until(async () => {
      const got = await runner.tasks.get({ id: task.id, context: caller });
      return got?.status === 'input_required' ? got : undefined;
    });
    const keys = Object.keys(asking.inputRequests!);
    expect(keys.map((key) => key.split('@')[0]).sort()).toEqual(['confirm', 'name']);
    const nameKey = keys.find((key) => key.startsWith('name@'))!;
    const confirmKey = keys.find((key) => key.startsWith('confirm@'))!;

    const answer = { action: 'accept', content: { name: 'Ada' } };
    expect(await runner.tasks.update({ id: task.id, context: caller, inputResponses: { [nameKey]: answer } })).toBe(
      true,
    );
    const partly = await runner.tasks.get({ id: task.id, context: caller });
    expect(partly).toMatchObject({ status: 'input_required' });
    expect(Object.keys(partly!.inputRequests!)).toEqual([confirmKey]);

    const go = { action: 'accept', content: { confirm: true } };
    expect(await runner.tasks.update({ id: task.id, context: caller, inputResponses: { [confirmKey]: go } })).toBe(
      true,
    );
    const done = await runner.tasks.get({ id: task.id, context: caller });
    expect(done).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Ada: go' }] } });
  });
});
