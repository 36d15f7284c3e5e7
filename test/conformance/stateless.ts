/**
 * Conformance fixtures: see `fixtures.ts` for the area this module holds. The
 * diagnostic tools of `server-stateless` (SEP-2575) and the `x-mcp-header`
 * tool of `http-custom-header-server-validation` (SEP-2243), as Baton flows:
 *
 * - `test_missing_capability`: asks the client's model (sampling) with no
 *   fallback, so a request that did not declare `sampling` gets `-32021` with
 *   HTTP 400 (`packages/adapters/src/mcp/missingCapability.ts`);
 * - `test_streaming_elicitation`: asks a form elicitation; its response stream
 *   carries only its own `input_required` result, never a server-to-client request;
 * - `test_logging_tool`: finishes at once; Baton sends no `notifications/message`
 *   (flows have no log channel), so a request without `_meta` log level gets none;
 * - `test_custom_headers`: `region` is declared `x-mcp-header: Region` through
 *   zod's `.meta()`, so a call must mirror it in `Mcp-Param-Region` (the SDK
 *   validates the header against the body, `-32020` with HTTP 400 otherwise).
 *
 * `caching` needs no fixture of its own: every list result carries `ttlMs` and
 * `cacheScope`.
 */
import type { FlowExposure } from '@baton/adapters';
import { ask, defineFlow, defineInputs, type Flow, form, type InputEvents, sampling } from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

const noArgs = z.object({});

// ─── test_missing_capability: sampling without a fallback ───

const missingCapabilityInputs = defineInputs({
  model_answer: sampling({
    params: { messages: [{ role: 'user', content: { type: 'text', text: 'Say hello.' } }], maxTokens: 50 },
  }),
});

const missingCapabilityMachine = setup({
  types: { events: {} as InputEvents<typeof missingCapabilityInputs>, output: {} as string },
}).createMachine({
  id: 'conformance_missing_capability',
  initial: 'asking',
  states: {
    asking: { meta: ask(missingCapabilityInputs, 'model_answer'), on: { 'input.model_answer': 'answered' } },
    answered: { type: 'final', output: 'The model answered.' },
  },
});

/** `test_missing_capability`: needs `sampling`; a request that did not declare it gets -32021. */
export const missingCapabilityFixture = defineFlow({
  name: 'test_missing_capability',
  description: "Conformance fixture: asks the client's model (sampling, no fallback).",
  args: noArgs,
  inputs: missingCapabilityInputs,
  machine: missingCapabilityMachine,
});

// ─── test_streaming_elicitation: one form elicitation ───

const streamingInputs = defineInputs({
  confirm: form({ message: 'Continue?', schema: z.object({ ok: z.boolean() }) }),
});

const streamingMachine = setup({
  types: {
    context: {} as { ok?: boolean },
    events: {} as InputEvents<typeof streamingInputs>,
    output: {} as string,
  },
}).createMachine({
  id: 'conformance_streaming_elicitation',
  context: {},
  initial: 'asking',
  states: {
    asking: {
      meta: ask(streamingInputs, 'confirm'),
      on: {
        'input.confirm': {
          target: 'done',
          actions: assign({ ok: ({ event }) => event.action === 'accept' && event.content.ok }),
        },
      },
    },
    done: { type: 'final', output: ({ context }) => (context.ok ? 'Confirmed.' : 'Not confirmed.') },
  },
});

/** `test_streaming_elicitation`: asks `confirm` (form); answered in an `input_required` result, not a request. */
export const streamingElicitationFixture = defineFlow({
  name: 'test_streaming_elicitation',
  description: 'Conformance fixture: asks the user to confirm with a form elicitation.',
  args: noArgs,
  inputs: streamingInputs,
  machine: streamingMachine,
});

// ─── test_logging_tool: finishes at once ───

/** `test_logging_tool`: completes at once; no log message reaches a request that set no log level. */
export const loggingFixture = defineFlow({
  name: 'test_logging_tool',
  description: 'Conformance fixture: does its work and finishes.',
  args: noArgs,
  inputs: defineInputs({}),
  machine: setup({ types: { output: {} as string } }).createMachine({
    id: 'conformance_logging',
    initial: 'done',
    states: { done: { type: 'final', output: 'Work done.' } },
  }),
});

// ─── test_custom_headers: an x-mcp-header argument ───

const customHeaderArgs = z.object({
  region: z.string().describe('Where to run').meta({ 'x-mcp-header': 'Region' }),
  query: z.string().describe('What to run (not mirrored)'),
});

/** `test_custom_headers`: `region` travels in `Mcp-Param-Region` too; answers what it received. */
export const customHeadersFixture = defineFlow({
  name: 'test_custom_headers',
  description: 'Conformance fixture: a tool whose `region` argument is mirrored in the Mcp-Param-Region header.',
  args: customHeaderArgs,
  inputs: defineInputs({}),
  machine: setup({
    types: { input: {} as z.infer<typeof customHeaderArgs>, output: {} as string },
  }).createMachine({
    id: 'conformance_custom_headers',
    initial: 'done',
    states: { done: { type: 'final', output: 'Custom headers test completed' } },
  }),
});

/** How each fixture of this module is served, by name (a flow not named here is a tool). */
export const exposure: Readonly<Record<string, FlowExposure>> = {};

/** Every fixture of this module. */
export const flows: readonly Flow[] = [
  missingCapabilityFixture,
  streamingElicitationFixture,
  loggingFixture,
  customHeadersFixture,
];
