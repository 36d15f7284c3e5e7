/**
 * `deploy_production`: compute a deployment plan, then ask in ONE round for a
 * confirmation (the message names the version and the plan) and a change
 * ticket. Confirmed with a ticket: deployed. Not confirmed, declined or
 * cancelled: cancelled. No answer within 15 minutes: expired. The
 * confirmation counts only once it was shown (`onlyWhenAsked`): a first call
 * that answers it ahead still sees the plan and is asked.
 */

import { ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';

interface Context {
  version: string;
  plan: string;
  ticket: string;
}

const inputs = defineInputs({
  confirm_deploy: form({
    message: ({ context }: { context: Context }) => `Deploy ${context.version} to production? Plan: ${context.plan}.`,
    schema: z.object({ confirm: z.boolean().describe('Deploy now?') }),
    // The message shows the server-computed plan: a confirmation sent before it was seen is no confirmation.
    onlyWhenAsked: true,
  }),
  change_ticket: form({
    message: 'Which change ticket covers this deployment?',
    schema: z.object({ ticket: z.string().min(1).max(64).describe('Change ticket, e.g. CHG-1234') }),
  }),
});

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as { version: string },
    events: {} as InputEvents<typeof inputs>,
  },
  actors: {
    // A real flow would ask the deploy system; this one derives a plan from the version.
    computePlan: fromPromise(async ({ input }: { input: { version: string } }) => {
      return `rolling update of 3 instances to ${input.version}`;
    }),
  },
}).createMachine({
  id: 'deploy_production',
  context: ({ input }) => ({ version: input.version, plan: '', ticket: '' }),
  initial: 'planning',
  states: {
    planning: {
      invoke: {
        id: 'computePlan',
        src: 'computePlan',
        input: ({ context }) => ({ version: context.version }),
        onDone: { target: 'awaitingApproval', actions: assign({ plan: ({ event }) => event.output }) },
      },
    },
    awaitingApproval: {
      meta: ask(inputs, 'confirm_deploy', 'change_ticket'),
      after: { '900000': 'expired' },
      on: {
        'input.confirm_deploy': [
          { guard: ({ event }) => event.action === 'accept' && event.content.confirm, target: 'confirmed' },
          { target: 'cancelled' },
        ],
      },
    },
    confirmed: {
      meta: ask(inputs, 'change_ticket'),
      on: {
        'input.change_ticket': [
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'deployed',
            actions: assign({ ticket: ({ event }) => (event.action === 'accept' ? event.content.ticket : '') }),
          },
          { target: 'cancelled' },
        ],
      },
    },
    deployed: {
      type: 'final',
      output: ({ context }) => `Deployed ${context.version} to production (change ticket ${context.ticket}).`,
    },
    cancelled: { type: 'final', output: ({ context }) => `Deployment of ${context.version} cancelled.` },
    expired: {
      type: 'final',
      output: ({ context }) => `Approval for ${context.version} expired after 15 minutes; nothing was deployed.`,
    },
  },
});

export const deployProduction = defineFlow({
  name: 'deploy_production',
  title: 'Deploy to production',
  description: 'Deploy a version to production after a confirmation and a change ticket.',
  args: z.object({ version: z.string().min(1).max(64).describe('The version to deploy') }),
  inputs,
  machine,
  annotations: { destructiveHint: true, openWorldHint: true },
});
