/**
 * The fixtures of the official MCP conformance suite's 10 Tasks-extension server
 * scenarios (`tasks-*`, SEP-2663 on the 2026-07-28 revision), each a Baton flow.
 * Names, arguments and behaviour follow the scenario descriptions' "Required server
 * fixtures":
 *
 * - `greet {name}`: sync only (never a task), `Hello, <name>!`;
 * - `slow_compute {seconds, label?}`: a durable step that sleeps `seconds`; withdrawable
 *   while it runs, so `tasks/cancel` settles it `cancelled`;
 * - `failing_job {}`: task support `required`; a step of ~1 s, then the tool error
 *   (`completed` with `result.isError`);
 * - `protocol_error_job {}`: a step that throws, with no `onError`: the flow fails, which a
 *   task shows as `failed` with a JSON-RPC `error`;
 * - `confirm_delete {filename}`: prepares (a short step, so the call is a task), then asks its
 *   requester to confirm: the task turns `input_required`, answered with `tasks/update`;
 * - `multi_input {}`: prepares, then asks two questions at once (partial answers stay held);
 * - `test_tool_with_task {}`: task support `required`; asks `user_name` by MRTR on the call,
 *   then runs a step that outlives the round: the final round answers with the task, whose
 *   result greets the name.
 *
 * Which scenario uses which: lifecycle (greet, slow_compute, failing_job, protocol_error_job),
 * capability-negotiation, wire-fields, request-state-removal, request-headers (greet,
 * slow_compute), mrtr-input (confirm_delete, multi_input), dispatch-and-envelope (greet,
 * slow_compute, confirm_delete, failing_job), required-task-error (failing_job),
 * mrtr-composition (test_tool_with_task); status-notifications names no fixture.
 */
import type { FlowExposure } from '@baton/adapters';
import {
  ask,
  defineFlow,
  defineInputs,
  FlowError,
  form,
  type InputEvents,
  step,
  type WithdrawEvent,
} from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

/** Sleep `ms`, or less when the step's signal aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** A durable step that waits `ms` and returns it. */
const pause = step('pause', async ({ input, signal }: { input: { ms: number }; signal?: AbortSignal }) => {
  await sleep(input.ms, signal);
  return input.ms;
});

// ─── greet ───

const greetMachine = setup({ types: { input: {} as { name: string }, output: {} as string } }).createMachine({
  id: 'conformance_greet',
  initial: 'done',
  context: ({ input }) => ({ name: input.name }),
  states: { done: { type: 'final', output: ({ context }) => `Hello, ${context.name}!` } },
});

/** `greet {name}`: `Hello, <name>!`, at once (a sync tool). */
export const greet = defineFlow({
  name: 'greet',
  description: 'Greets someone by name, at once.',
  args: z.object({ name: z.string().max(200) }),
  inputs: {},
  machine: greetMachine,
});

// ─── slow_compute ───

const slowMachine = setup({
  types: {
    input: {} as { seconds: number; label?: string },
    context: {} as { seconds: number; label: string },
    events: {} as WithdrawEvent,
  },
  actors: { pause },
}).createMachine({
  id: 'conformance_slow_compute',
  context: ({ input }) => ({ seconds: input.seconds, label: input.label ?? 'compute' }),
  initial: 'computing',
  states: {
    computing: {
      invoke: {
        id: 'pause',
        src: 'pause',
        input: ({ context }) => ({ ms: context.seconds * 1000 }),
        onDone: 'computed',
      },
      on: { 'baton.withdraw': 'cancelled' },
    },
    computed: {
      type: 'final',
      output: ({ context }) => `Computed ${context.label} in ${context.seconds} second(s).`,
    },
    cancelled: { type: 'final', output: ({ context }) => `Cancelled ${context.label}.` },
  },
});

/** `slow_compute {seconds, label?}`: sleeps `seconds` in a durable step; withdrawable while it runs. */
export const slowCompute = defineFlow({
  name: 'slow_compute',
  description: 'Computes for the given number of seconds, then answers.',
  args: z.object({ seconds: z.number().min(0).max(300), label: z.string().max(200).optional() }),
  inputs: {},
  machine: slowMachine,
});

// ─── failing_job ───

const failingMachine = setup({
  types: { output: {} as { failed: boolean }, events: {} as WithdrawEvent },
  actors: { pause },
}).createMachine({
  id: 'conformance_failing_job',
  initial: 'working',
  states: {
    working: {
      invoke: { id: 'pause', src: 'pause', input: { ms: 1000 }, onDone: 'failed' },
      on: { 'baton.withdraw': 'cancelled' },
    },
    failed: { type: 'final', output: { failed: true } },
    cancelled: { type: 'final', output: { failed: false } },
  },
});

/** `failing_job {}`: must run as a task; after ~1 s, a tool execution error. */
export const failingJob = defineFlow({
  name: 'failing_job',
  description: 'Works for about a second, then reports a tool execution error.',
  args: z.object({}),
  inputs: {},
  machine: failingMachine,
  result: (output: { failed: boolean }) =>
    output.failed
      ? { content: [{ type: 'text', text: 'The job failed: the input could not be processed.' }], isError: true }
      : 'The job was cancelled.',
});

// ─── protocol_error_job ───

const crash = step('crash', async () => {
  await sleep(500);
  throw new FlowError('The job crashed: its worker is unavailable.');
});

const crashingMachine = setup({ types: { events: {} as WithdrawEvent }, actors: { crash } }).createMachine({
  id: 'conformance_protocol_error_job',
  initial: 'working',
  states: {
    // No onError: the step's error fails the flow itself (a protocol-level failure, not a tool result).
    working: { invoke: { id: 'crash', src: 'crash' }, on: { 'baton.withdraw': 'cancelled' } },
    cancelled: { type: 'final' },
  },
});

/** `protocol_error_job {}`: a step that throws with nowhere to go: the task ends `failed`. */
export const protocolErrorJob = defineFlow({
  name: 'protocol_error_job',
  description: 'Crashes while it works: the task fails with a protocol-level error.',
  args: z.object({}),
  inputs: {},
  machine: crashingMachine,
});

// ─── confirm_delete ───

const confirmInputs = defineInputs({
  confirm: form({
    message: ({ context }: { context: { filename: string } }) => `Delete ${context.filename}?`,
    schema: z.object({ confirm: z.boolean().describe('Delete the file?') }),
  }),
});

const confirmMachine = setup({
  types: {
    input: {} as { filename: string },
    context: {} as { filename: string },
    events: {} as InputEvents<typeof confirmInputs> | WithdrawEvent,
  },
  actors: { pause },
}).createMachine({
  id: 'conformance_confirm_delete',
  context: ({ input }) => ({ filename: input.filename }),
  initial: 'preparing',
  states: {
    preparing: {
      invoke: { id: 'pause', src: 'pause', input: { ms: 1000 }, onDone: 'confirming' },
      on: { 'baton.withdraw': 'kept' },
    },
    confirming: {
      meta: ask(confirmInputs, 'confirm'),
      on: {
        'input.confirm': [
          { guard: ({ event }) => event.action === 'accept' && event.content.confirm, target: 'deleted' },
          { target: 'kept' },
        ],
        'baton.withdraw': 'kept',
      },
    },
    deleted: { type: 'final', output: ({ context }) => `Deleted ${context.filename}.` },
    kept: { type: 'final', output: ({ context }) => `Kept ${context.filename}.` },
  },
});

/** `confirm_delete {filename}`: a task that asks its requester to confirm (`input_required`, then `tasks/update`). */
export const confirmDelete = defineFlow({
  name: 'confirm_delete',
  description: 'Deletes a file once you confirm.',
  args: z.object({ filename: z.string().max(200) }),
  inputs: confirmInputs,
  machine: confirmMachine,
});

// ─── multi_input ───

const multiInputs = defineInputs({
  name: form({ message: 'Your name?', schema: z.object({ name: z.string().max(200) }) }),
  confirm: form({ message: 'Go ahead?', schema: z.object({ confirm: z.boolean() }) }),
});

const multiMachine = setup({
  types: {
    context: {} as { name?: string; confirm?: boolean },
    events: {} as InputEvents<typeof multiInputs> | WithdrawEvent,
  },
  actors: { pause },
}).createMachine({
  id: 'conformance_multi_input',
  context: {},
  initial: 'preparing',
  states: {
    preparing: {
      invoke: { id: 'pause', src: 'pause', input: { ms: 1000 }, onDone: 'asking' },
      on: { 'baton.withdraw': 'withdrawn' },
    },
    // Two questions at once: both keys are pending together.
    asking: {
      type: 'parallel',
      on: { 'baton.withdraw': '#conformance_multi_input.withdrawn' },
      states: {
        who: {
          initial: 'asking',
          states: {
            asking: {
              meta: ask(multiInputs, 'name'),
              on: {
                'input.name': {
                  target: 'done',
                  actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : '') }),
                },
              },
            },
            done: { type: 'final' },
          },
        },
        go: {
          initial: 'asking',
          states: {
            asking: {
              meta: ask(multiInputs, 'confirm'),
              on: {
                'input.confirm': {
                  target: 'done',
                  actions: assign({
                    confirm: ({ event }) => event.action === 'accept' && event.content.confirm,
                  }),
                },
              },
            },
            done: { type: 'final' },
          },
        },
      },
      onDone: 'answered',
    },
    answered: {
      type: 'final',
      output: ({ context }) => `Thanks ${context.name || 'stranger'}: ${context.confirm ? 'going ahead' : 'stopped'}.`,
    },
    withdrawn: { type: 'final', output: 'Withdrawn.' },
  },
});

/** `multi_input {}`: a task that asks two questions at once; answered one at a time, it waits for both. */
export const multiInput = defineFlow({
  name: 'multi_input',
  description: 'Asks two questions at once, then answers.',
  args: z.object({}),
  inputs: multiInputs,
  machine: multiMachine,
});

// ─── test_tool_with_task ───

const nameInputs = defineInputs({
  user_name: form({ message: 'What is your name?', schema: z.object({ name: z.string().max(200) }) }),
});

const escalatingMachine = setup({
  types: { context: {} as { name: string }, events: {} as InputEvents<typeof nameInputs> | WithdrawEvent },
  actors: { pause },
}).createMachine({
  id: 'conformance_tool_with_task',
  context: { name: '' },
  initial: 'asking',
  states: {
    asking: {
      meta: ask(nameInputs, 'user_name'),
      on: {
        'input.user_name': {
          target: 'working',
          actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : 'stranger') }),
        },
      },
    },
    // Long-running work after the answer: the round that delivers it answers with the task.
    working: {
      invoke: { id: 'pause', src: 'pause', input: { ms: 1500 }, onDone: 'done' },
      on: { 'baton.withdraw': 'done' },
    },
    done: { type: 'final', output: ({ context }) => `Hello, ${context.name}! Your task is done.` },
  },
});

/** `test_tool_with_task {}`: must run as a task; asks `user_name` by MRTR, then escalates to a task. */
export const testToolWithTask = defineFlow({
  name: 'test_tool_with_task',
  description: 'Asks your name, then works on it as a task.',
  args: z.object({}),
  inputs: nameInputs,
  machine: escalatingMachine,
});

/** How each fixture of this module is served, by name (a flow not named here is a tool). */
export const exposure: Readonly<Record<string, FlowExposure>> = {
  greet: { tool: true, task: false },
  failing_job: { tool: true, task: 'required' },
  test_tool_with_task: { tool: true, task: 'required' },
};

/** Every fixture of this module. */
export const flows = [
  greet,
  slowCompute,
  failingJob,
  protocolErrorJob,
  confirmDelete,
  multiInput,
  testToolWithTask,
] as const;
