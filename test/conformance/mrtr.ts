/**
 * The fixtures of the official MCP conformance suite's 14 `input-required-result-*`
 * server scenarios (SEP-2322, multi round-trip requests). Every fixture tool and the
 * fixture prompt is a Baton flow; `fixtures.ts` serves them with the others.
 *
 * Names, input keys, messages and schemas follow the scenario descriptions of
 * the suite (`conformance list --server`, and each scenario's description).
 * Which scenario uses which fixture:
 *
 * - tool `test_input_required_result_elicitation`: basic-elicitation, result-type,
 *   missing-input-response, ignore-extra-params, validate-input
 * - tool `test_input_required_result_sampling`: basic-sampling
 * - tool `test_input_required_result_list_roots`: basic-list-roots
 * - tool `test_input_required_result_request_state`: request-state
 * - tool `test_input_required_result_multiple_inputs`: multiple-input-requests
 * - tool `test_input_required_result_multi_round`: multi-round
 * - tool `test_input_required_result_tampered_state`: tampered-state
 * - tool `test_input_required_result_capabilities`: capability-check
 * - prompt `test_input_required_result_prompt`: non-tool-request (`prompts/get`)
 * - no fixture (`tools/list` and `prompts/list` must not answer input_required): unsupported-methods
 *
 * The module exports every flow by name, `flows` (all of them) and `exposure`, which
 * makes `test_input_required_result_prompt` a prompt instead of a tool.
 */

import type { FlowExposure } from '@baton/adapters';
import { ask, defineFlow, defineInputs, form, type InputEvents, roots, sampling } from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

/** No arguments: every fixture is called with `arguments: {}` (or none, for the prompt). */
const noArgs = z.object({});

/** The text of a sampling answer, or a placeholder for non-text content. */
function sampledText(content: { type: string; text?: string }): string {
  return content.type === 'text' && typeof content.text === 'string' ? content.text : `[${content.type} content]`;
}

/** `file:///a (A), file:///b` */
function describeRoots(list: readonly { uri: string; name?: string }[]): string {
  if (list.length === 0) return 'no roots';
  return list.map((root) => (root.name ? `${root.uri} (${root.name})` : root.uri)).join(', ');
}

// ─── A1: basic elicitation (also result-type, missing-input-response, ignore-extra-params, validate-input) ───

const elicitationInputs = defineInputs({
  user_name: form({ message: 'What is your name?', schema: z.object({ name: z.string() }) }),
});

const elicitationMachine = setup({
  types: {
    context: {} as { name?: string },
    events: {} as InputEvents<typeof elicitationInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_elicitation',
  context: {},
  initial: 'asking',
  states: {
    asking: {
      meta: ask(elicitationInputs, 'user_name'),
      on: {
        'input.user_name': [
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'greeted',
            actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : undefined) }),
          },
          { target: 'declined' },
        ],
      },
    },
    greeted: { type: 'final', output: ({ context }) => `Hello, ${context.name}!` },
    declined: { type: 'final', output: 'Hello, stranger! (no name was given)' },
  },
});

/** `test_input_required_result_elicitation`: asks `user_name` (form `{ name: string }`), answers `Hello, <name>!`. */
export const elicitationFixture = defineFlow({
  name: 'test_input_required_result_elicitation',
  description: 'Conformance fixture: asks the user for their name with a form elicitation, then greets them.',
  args: noArgs,
  inputs: elicitationInputs,
  machine: elicitationMachine,
});

// ─── A2: basic sampling ───

const samplingInputs = defineInputs({
  capital_question: sampling({
    params: {
      messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
      maxTokens: 100,
    },
  }),
});

const samplingMachine = setup({
  types: {
    context: {} as { answer?: string },
    events: {} as InputEvents<typeof samplingInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_sampling',
  context: {},
  initial: 'asking',
  states: {
    asking: {
      meta: ask(samplingInputs, 'capital_question'),
      on: {
        'input.capital_question': {
          target: 'answered',
          actions: assign({
            answer: ({ event }) => (event.action === 'accept' ? sampledText(event.result.content) : undefined),
          }),
        },
      },
    },
    answered: { type: 'final', output: ({ context }) => `The model answered: ${context.answer ?? '(nothing)'}` },
  },
});

/** `test_input_required_result_sampling`: asks `capital_question` (sampling), returns the model's text. */
export const samplingFixture = defineFlow({
  name: 'test_input_required_result_sampling',
  description: "Conformance fixture: asks the client's model for the capital of France and returns its answer.",
  args: noArgs,
  inputs: samplingInputs,
  machine: samplingMachine,
});

// ─── A3: basic roots/list ───

const listRootsInputs = defineInputs({ client_roots: roots() });

const listRootsMachine = setup({
  types: {
    context: {} as { roots: { uri: string; name?: string }[] },
    events: {} as InputEvents<typeof listRootsInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_list_roots',
  context: { roots: [] },
  initial: 'asking',
  states: {
    asking: {
      meta: ask(listRootsInputs, 'client_roots'),
      on: {
        'input.client_roots': {
          target: 'listed',
          actions: assign({ roots: ({ event }) => (event.action === 'accept' ? event.roots : []) }),
        },
      },
    },
    listed: { type: 'final', output: ({ context }) => `Client roots: ${describeRoots(context.roots)}` },
  },
});

/** `test_input_required_result_list_roots`: asks `client_roots` (roots/list), lists the roots received. */
export const listRootsFixture = defineFlow({
  name: 'test_input_required_result_list_roots',
  description: 'Conformance fixture: asks the client for its workspace roots and lists them.',
  args: noArgs,
  inputs: listRootsInputs,
  machine: listRootsMachine,
});

// ─── A4 (request-state) and A12 (tampered-state): one confirmation, state held in requestState ───

const confirmInputs = defineInputs({
  confirm: form({ message: 'Please confirm', schema: z.object({ ok: z.boolean() }) }),
});

function confirmMachine(id: string, confirmed: string, refused: string) {
  return setup({
    types: {
      context: {} as Record<string, never>,
      events: {} as InputEvents<typeof confirmInputs>,
      output: {} as string,
    },
  }).createMachine({
    id,
    context: {},
    initial: 'asking',
    states: {
      asking: {
        meta: ask(confirmInputs, 'confirm'),
        on: {
          'input.confirm': [
            { guard: ({ event }) => event.action === 'accept' && event.content.ok, target: 'confirmed' },
            { target: 'refused' },
          ],
        },
      },
      confirmed: { type: 'final', output: confirmed },
      refused: { type: 'final', output: refused },
    },
  });
}

/**
 * `test_input_required_result_request_state`: asks `confirm` (form `{ ok: boolean }`) with a sealed
 * requestState; the complete result says `state-ok`, which Baton only reaches after opening and
 * verifying the echoed state.
 */
export const requestStateFixture = defineFlow({
  name: 'test_input_required_result_request_state',
  description: 'Conformance fixture: asks for a confirmation and completes from the echoed, verified requestState.',
  args: noArgs,
  inputs: confirmInputs,
  machine: confirmMachine(
    'conformance_request_state',
    'state-ok: the requestState was verified and the confirmation received',
    'state-ok: the requestState was verified; the confirmation was refused',
  ),
});

/** `test_input_required_result_tampered_state`: asks `confirm`; a tampered requestState is refused with -32602. */
export const tamperedStateFixture = defineFlow({
  name: 'test_input_required_result_tampered_state',
  description: 'Conformance fixture: asks for a confirmation; a modified requestState is rejected.',
  args: noArgs,
  inputs: confirmInputs,
  machine: confirmMachine('conformance_tampered_state', 'Confirmed.', 'Not confirmed.'),
});

// ─── A5: three input kinds in one round ───

const multipleInputs = defineInputs({
  user_name: form({ message: 'What is your name?', schema: z.object({ name: z.string() }) }),
  greeting: sampling({
    params: { messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 },
  }),
  client_roots: roots(),
});

interface MultipleContext {
  /** `null`: the user declined. */
  name?: string | null;
  greeting?: string;
  roots?: { uri: string; name?: string }[];
}

const multipleMachine = setup({
  types: {
    context: {} as MultipleContext,
    events: {} as InputEvents<typeof multipleInputs>,
    output: {} as string,
  },
  guards: {
    allAnswered: ({ context }) =>
      context.name !== undefined && context.greeting !== undefined && context.roots !== undefined,
  },
}).createMachine({
  id: 'conformance_multiple_inputs',
  context: {},
  initial: 'collecting',
  states: {
    // All three requests go out in one round; each answer is recorded in place and the
    // flow moves on once the last one is in (the runner delivers a round's answers together).
    collecting: {
      meta: ask(multipleInputs, 'user_name', 'greeting', 'client_roots'),
      always: { guard: 'allAnswered', target: 'done' },
      on: {
        'input.user_name': {
          actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : null) }),
        },
        'input.greeting': {
          actions: assign({
            greeting: ({ event }) => (event.action === 'accept' ? sampledText(event.result.content) : ''),
          }),
        },
        'input.client_roots': {
          actions: assign({ roots: ({ event }) => (event.action === 'accept' ? event.roots : []) }),
        },
      },
    },
    done: {
      type: 'final',
      output: ({ context }) =>
        `${context.name ? `Name: ${context.name}.` : 'No name given.'} Greeting: ${context.greeting}. ` +
        `Roots: ${describeRoots(context.roots ?? [])}.`,
    },
  },
});

/** `test_input_required_result_multiple_inputs`: asks `user_name` (form), `greeting` (sampling), `client_roots` (roots) in one round. */
export const multipleInputsFixture = defineFlow({
  name: 'test_input_required_result_multiple_inputs',
  description: 'Conformance fixture: asks for a name, a sampled greeting and the client roots in a single round.',
  args: noArgs,
  inputs: multipleInputs,
  machine: multipleMachine,
});

// ─── A6: three rounds ───

const multiRoundInputs = defineInputs({
  step1: form({ message: 'Step 1: What is your name?', schema: z.object({ name: z.string() }) }),
  step2: form({ message: 'Step 2: What is your favorite color?', schema: z.object({ color: z.string() }) }),
});

const multiRoundMachine = setup({
  types: {
    context: {} as { name?: string; color?: string },
    events: {} as InputEvents<typeof multiRoundInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_multi_round',
  context: {},
  initial: 'step1',
  states: {
    step1: {
      meta: ask(multiRoundInputs, 'step1'),
      on: {
        'input.step1': [
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'step2',
            actions: assign({ name: ({ event }) => (event.action === 'accept' ? event.content.name : undefined) }),
          },
          { target: 'cancelled' },
        ],
      },
    },
    step2: {
      meta: ask(multiRoundInputs, 'step2'),
      on: {
        'input.step2': [
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'done',
            actions: assign({ color: ({ event }) => (event.action === 'accept' ? event.content.color : undefined) }),
          },
          { target: 'cancelled' },
        ],
      },
    },
    done: { type: 'final', output: ({ context }) => `${context.name}'s favorite color is ${context.color}.` },
    cancelled: { type: 'final', output: 'Cancelled.' },
  },
});

/** `test_input_required_result_multi_round`: asks `step1` (name), then `step2` (color) in a second round, then completes. */
export const multiRoundFixture = defineFlow({
  name: 'test_input_required_result_multi_round',
  description: 'Conformance fixture: asks for a name, then in a second round for a favorite color.',
  args: noArgs,
  inputs: multiRoundInputs,
  machine: multiRoundMachine,
});

// ─── A13: only ask what the client declared ───

const capabilitiesInputs = defineInputs({
  // Declared fallback: a client without form elicitation gets the sampling path instead.
  approval: form({
    message: 'Approve this action?',
    schema: z.object({ approve: z.boolean() }),
    fallback: true,
  }),
  model_approval: sampling({
    params: {
      messages: [
        { role: 'user', content: { type: 'text', text: 'Should this action be approved? Answer yes or no.' } },
      ],
      maxTokens: 10,
    },
  }),
});

const capabilitiesMachine = setup({
  types: {
    context: {} as { approved?: boolean; by?: 'user' | 'model' },
    events: {} as InputEvents<typeof capabilitiesInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_capabilities',
  context: {},
  initial: 'askingUser',
  states: {
    askingUser: {
      meta: ask(capabilitiesInputs, 'approval'),
      on: {
        'input.approval': [
          // The client did not declare elicitation: ask its model instead.
          { guard: ({ event }) => event.action === 'unsupported', target: 'askingModel' },
          {
            target: 'decided',
            actions: assign({
              approved: ({ event }) => event.action === 'accept' && event.content.approve,
              by: 'user',
            }),
          },
        ],
      },
    },
    askingModel: {
      meta: ask(capabilitiesInputs, 'model_approval'),
      on: {
        'input.model_approval': {
          target: 'decided',
          actions: assign({
            approved: ({ event }) => event.action === 'accept' && /\byes\b/i.test(sampledText(event.result.content)),
            by: 'model',
          }),
        },
      },
    },
    decided: {
      type: 'final',
      output: ({ context }) => `${context.approved ? 'Approved' : 'Not approved'} by the ${context.by}.`,
    },
  },
});

/**
 * `test_input_required_result_capabilities`: asks `approval` (form) when the client declared
 * elicitation, otherwise takes the declared fallback and asks `model_approval` (sampling).
 */
export const capabilitiesFixture = defineFlow({
  name: 'test_input_required_result_capabilities',
  description: "Conformance fixture: asks the user for approval, or the client's model when the client cannot elicit.",
  args: noArgs,
  inputs: capabilitiesInputs,
  machine: capabilitiesMachine,
});

// ─── A9: a prompt (prompts/get) ───

const promptInputs = defineInputs({
  user_context: form({
    message: 'What context should the prompt use?',
    schema: z.object({ context: z.string() }),
  }),
});

const promptMachine = setup({
  types: {
    context: {} as { text?: string },
    events: {} as InputEvents<typeof promptInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_prompt',
  context: {},
  initial: 'asking',
  states: {
    asking: {
      meta: ask(promptInputs, 'user_context'),
      on: {
        'input.user_context': {
          target: 'ready',
          actions: assign({
            text: ({ event }) => (event.action === 'accept' ? event.content.context : undefined),
          }),
        },
      },
    },
    ready: {
      type: 'final',
      output: ({ context }) =>
        context.text === undefined
          ? 'Answer the question without extra context.'
          : `Answer the question using this context: ${context.text}`,
    },
  },
});

/**
 * `test_input_required_result_prompt`: served as a PROMPT (`prompts/get`), not a tool. Asks
 * `user_context` (form `{ context: string }`), then returns the prompt text built from it.
 */
export const promptFixture = defineFlow({
  name: 'test_input_required_result_prompt',
  description: 'Conformance fixture prompt: asks for the context to use, then returns a prompt built from it.',
  args: noArgs,
  inputs: promptInputs,
  machine: promptMachine,
});

/** How each fixture is served, by name: the prompt fixture is a prompt only (the others are tools). */
export const exposure: Readonly<Record<string, FlowExposure>> = {
  [promptFixture.name]: { tool: false, prompt: true },
};

/** Every MRTR fixture: eight tools, then the prompt. */
export const flows = [
  elicitationFixture,
  samplingFixture,
  listRootsFixture,
  requestStateFixture,
  multipleInputsFixture,
  multiRoundFixture,
  tamperedStateFixture,
  capabilitiesFixture,
  promptFixture,
];
