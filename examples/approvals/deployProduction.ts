/**
 * `deploy_production`: compute a deployment plan, then ask in ONE round for a
 * confirmation (the message names the version and the plan) and a change
 * ticket. Confirmed with a ticket: deployed. Not confirmed, declined or
 * cancelled: cancelled. No answer within 15 minutes: expired. The
 * confirmation counts only once it was shown (`onlyWhenAsked`): a first call
 * that answers it ahead still sees the plan and is asked.
 *
 * With a `commit` argument (and a ledger), the flow first waits for the event
 * `ci.finished` of that commit (`POST /events/ci.finished`, `baton send-event`):
 * success goes on to the confirmation, failure ends the flow, and no report
 * within 30 minutes ends it too. Without `commit` it asks at once, as before
 * (and needs no ledger).
 */

import { ask, defineFlow, defineInputs, event, form, type InputEvents } from '@baton/engine';
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';

interface Context {
  version: string;
  plan: string;
  ticket: string;
  /** The commit CI must report green first; `null`: no wait. */
  commit: string | null;
  /** What CI reported for it. */
  ci: string;
}

/** CI's report on a commit: `POST /events/ci.finished` with `{ "data": { "commit", "status" } }`. */
export const ciFinished = event({
  name: 'ci.finished',
  schema: z.object({
    commit: z.string().min(7).max(40).describe('The commit CI built'),
    status: z.enum(['success', 'failure']).describe('How the build ended'),
  }),
  match: ({ context }: { context: Context }) => context.commit ?? '',
  key: ({ data }) => data.commit,
});

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
  ci: ciFinished,
});

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as { version: string; commit?: string },
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
  context: ({ input }) => ({ version: input.version, plan: '', ticket: '', commit: input.commit ?? null, ci: '' }),
  initial: 'planning',
  states: {
    planning: {
      invoke: {
        id: 'computePlan',
        src: 'computePlan',
        input: ({ context }) => ({ version: context.version }),
        onDone: [
          {
            guard: ({ context }) => context.commit !== null,
            target: 'awaitingCi',
            actions: assign({ plan: ({ event }) => event.output }),
          },
          { target: 'awaitingApproval', actions: assign({ plan: ({ event }) => event.output }) },
        ],
      },
    },
    // Only with a commit: CI must report it green first (the instance is parked meanwhile).
    awaitingCi: {
      meta: ask(inputs, 'ci'),
      after: { '1800000': 'ciTimedOut' },
      on: {
        'input.ci': [
          { guard: ({ event }) => event.data.status === 'success', target: 'awaitingApproval' },
          { target: 'ciFailed', actions: assign({ ci: ({ event }) => event.data.status }) },
        ],
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
    ciFailed: {
      type: 'final',
      output: ({ context }) => `CI reported ${context.ci} for ${context.commit}; ${context.version} was not deployed.`,
    },
    ciTimedOut: {
      type: 'final',
      output: ({ context }) => `CI did not report on ${context.commit} within 30 minutes; nothing was deployed.`,
    },
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
  args: z.object({
    version: z.string().min(1).max(64).describe('The version to deploy'),
    commit: z
      .string()
      .regex(/^[0-9a-f]{7,40}$/)
      .optional()
      .describe('The commit to deploy: when given, wait up to 30 minutes for CI to report it green first'),
  }),
  inputs,
  machine,
  annotations: { destructiveHint: true, openWorldHint: true },
});
