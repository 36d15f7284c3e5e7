/**
 * `draft_release_notes`: lists the client's workspace roots, asks the client's
 * model to draft release notes for them, then asks the user to publish. A
 * client without sampling takes the declared fallback (a template draft); one
 * without roots drafts for "the current workspace".
 */

import { ask, defineFlow, defineInputs, form, type InputEvents, roots, sampling } from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

interface Context {
  version: string;
  roots: string[];
  draft: string;
}

const inputs = defineInputs({
  // Bounded: the roots' names and the draft are kept in the state between rounds.
  workspace: roots({ fallback: true, maxRoots: 50, maxLength: 4000 }),
  draft: sampling({
    fallback: true,
    maxLength: 4000,
    params: ({ context }: { context: Context }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: `Draft short release notes for version ${context.version} of the projects in: ${context.roots.join(', ') || 'the current workspace'}.`,
          },
        },
      ],
      maxTokens: 400,
    }),
  }),
  publish: form({
    message: ({ context }: { context: Context }) => `Publish these release notes?\n\n${context.draft}`,
    schema: z.object({ publish: z.boolean() }),
  }),
});

const machine = setup({
  types: { context: {} as Context, input: {} as { version: string }, events: {} as InputEvents<typeof inputs> },
}).createMachine({
  id: 'draft_release_notes',
  context: ({ input }) => ({ version: input.version, roots: [], draft: '' }),
  initial: 'listingRoots',
  states: {
    listingRoots: {
      meta: ask(inputs, 'workspace'),
      on: {
        'input.workspace': {
          target: 'drafting',
          actions: assign({
            roots: ({ event }) => (event.action === 'accept' ? event.roots.map((r) => r.name ?? r.uri) : []),
          }),
        },
      },
    },
    drafting: {
      meta: ask(inputs, 'draft'),
      on: {
        'input.draft': {
          target: 'confirming',
          actions: assign({
            draft: ({ event, context }) =>
              event.action === 'accept' && typeof event.result.content.text === 'string'
                ? event.result.content.text
                : `Release ${context.version}: bug fixes and improvements.`,
          }),
        },
      },
    },
    confirming: {
      meta: ask(inputs, 'publish'),
      on: {
        'input.publish': [
          { guard: ({ event }) => event.action === 'accept' && event.content.publish, target: 'published' },
          { target: 'discarded' },
        ],
      },
    },
    published: { type: 'final', output: ({ context }) => `Published release notes:\n${context.draft}` },
    discarded: { type: 'final', output: () => 'Release notes discarded.' },
  },
});

export const draftReleaseNotes = defineFlow({
  name: 'draft_release_notes',
  title: 'Draft release notes',
  description: "Draft release notes for the client's workspace with the client's model, then confirm publishing.",
  args: z.object({ version: z.string().min(1).max(64) }),
  inputs,
  machine,
});
