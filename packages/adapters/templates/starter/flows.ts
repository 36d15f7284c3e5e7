/**
 * The flows module that `npm run serve` serves (`baton serve flows.ts`): every
 * exported flow becomes an MCP tool. `publish_release` is a two-round flow:
 * it asks the user to confirm the release, then asks for one line of release
 * notes, and publishes. Declining or cancelling either question cancels the
 * release. Between rounds nothing stays in memory: the machine's state travels
 * sealed in the `requestState` the client echoes back.
 */
import { ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

interface Context {
  version: string;
  note: string;
}

/** What the flow may ask, by key: each is an elicitation form validated with its zod schema. */
const inputs = defineInputs({
  confirm: form({
    message: ({ context }: { context: Context }) => `Publish release ${context.version}?`,
    schema: z.object({ confirm: z.boolean().describe('Publish now?') }),
  }),
  note: form({
    message: 'One line for the release notes?',
    schema: z.object({ note: z.string().min(1).max(200).describe('Release note') }),
  }),
});

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as { version: string },
    events: {} as InputEvents<typeof inputs>,
  },
}).createMachine({
  id: 'publish_release',
  context: ({ input }) => ({ version: input.version, note: '' }),
  initial: 'confirming',
  states: {
    // Round 1: a state whose meta asks an input answers the call with input_required.
    confirming: {
      meta: ask(inputs, 'confirm'),
      on: {
        'input.confirm': [
          { guard: ({ event }) => event.action === 'accept' && event.content.confirm, target: 'writingNote' },
          { target: 'cancelled' },
        ],
      },
    },
    // Round 2: the client retries with the answer; the flow resumes here and asks again.
    writingNote: {
      meta: ask(inputs, 'note'),
      on: {
        'input.note': [
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'published',
            actions: assign({ note: ({ event }) => (event.action === 'accept' ? event.content.note : '') }),
          },
          { target: 'cancelled' },
        ],
      },
    },
    // A final state's output is the tool's result.
    published: {
      type: 'final',
      output: ({ context }) => `Published ${context.version}: ${context.note}`,
    },
    cancelled: {
      type: 'final',
      output: ({ context }) => `Release ${context.version} cancelled; nothing was published.`,
    },
  },
});

export const publishRelease = defineFlow({
  name: 'publish_release',
  title: 'Publish a release',
  description: 'Publish a release after a confirmation and one line of release notes.',
  args: z.object({ version: z.string().min(1).max(64).describe('The version to publish, e.g. 1.2.3') }),
  inputs,
  machine,
});

export default [publishRelease];
