/**
 * Single-use access codes on the ledger. `grant_temporary_access` asks for an
 * approval, then mints a one-time code in the durable step `mintCode` (its
 * result is recorded in the ledger, sealed: a retried or replayed round hands
 * out the same code instead of minting another); `redeem_access_code` redeems a code
 * exactly once across every server sharing the ledger, and says clearly
 * whether a code was already used, expired or unknown.
 */

import {
  ask,
  defineFlow,
  defineInputs,
  type FlowServices,
  form,
  type InputEvents,
  type RedeemTokenResult,
  step,
} from '@baton/engine';
import { assign, fromPromise, setup } from 'xstate';
import { z } from 'zod';

const PURPOSE = 'access-code';

interface GrantContext {
  resource: string;
  minutes: number;
  code: string;
}

const grantInputs = defineInputs({
  approval: form({
    message: ({ context }: { context: GrantContext }) =>
      `Grant temporary access to ${context.resource} for ${context.minutes} minutes?`,
    schema: z.object({ approve: z.boolean() }),
  }),
});

const grantMachine = setup({
  types: {
    context: {} as GrantContext,
    input: {} as { resource: string; minutes: number },
    events: {} as InputEvents<typeof grantInputs>,
  },
  actors: {
    // A durable step: minted once per request, on the ledger the runner's services use.
    mintCode: step(
      'mintCode',
      async ({ input, services }: { input: { resource: string; minutes: number }; services: FlowServices }) =>
        services.tokens.mint({ purpose: PURPOSE, ttlSeconds: input.minutes * 60, data: input.resource }),
    ),
  },
}).createMachine({
  id: 'grant_temporary_access',
  context: ({ input }) => ({ ...input, code: '' }),
  initial: 'awaitingApproval',
  states: {
    awaitingApproval: {
      meta: ask(grantInputs, 'approval'),
      on: {
        'input.approval': [
          { guard: ({ event }) => event.action === 'accept' && event.content.approve, target: 'minting' },
          { target: 'denied' },
        ],
      },
    },
    minting: {
      invoke: {
        id: 'mintCode',
        src: 'mintCode',
        input: ({ context }) => ({ resource: context.resource, minutes: context.minutes }),
        onDone: { target: 'granted', actions: assign({ code: ({ event }) => event.output }) },
      },
    },
    granted: {
      type: 'final',
      output: ({ context }) =>
        `Access to ${context.resource} granted for ${context.minutes} minutes. One-time code: ${context.code}`,
    },
    denied: { type: 'final', output: ({ context }) => `Access to ${context.resource} was not approved.` },
  },
});

export const grantTemporaryAccess = defineFlow({
  name: 'grant_temporary_access',
  title: 'Grant temporary access',
  description: 'After approval, mint a one-time access code for a resource.',
  args: z.object({
    resource: z.string().min(1),
    minutes: z
      .number()
      .int()
      .positive()
      .max(24 * 60),
  }),
  inputs: grantInputs,
  // The minted code is a credential: never shown to an inspector (nor in its steps' outputs).
  sensitive: ['code'],
  machine: grantMachine,
  needsLedger: true, // codes are minted on the ledger: served without one, the tool says so up front
});

function describeRedemption(result: RedeemTokenResult): string {
  switch (result.status) {
    case 'redeemed':
      return `Access code accepted: access to ${result.data ?? 'the resource'} is open.`;
    case 'already_used':
      return 'This access code was already used.';
    case 'expired':
      return 'This access code has expired.';
    case 'unknown':
      return 'This access code is not known.';
  }
}

const redeemMachine = setup({
  types: { context: {} as { code: string; message: string }, input: {} as { code: string } },
  actors: {
    redeemCode: fromPromise<RedeemTokenResult, { code: string }>(async () => {
      throw new Error('redeemCode is provided by the runner');
    }),
  },
}).createMachine({
  id: 'redeem_access_code',
  context: ({ input }) => ({ code: input.code, message: '' }),
  initial: 'redeeming',
  states: {
    redeeming: {
      invoke: {
        id: 'redeemCode',
        src: 'redeemCode',
        input: ({ context }) => ({ code: context.code }),
        onDone: { target: 'done', actions: assign({ message: ({ event }) => describeRedemption(event.output) }) },
      },
    },
    done: { type: 'final', output: ({ context }) => context.message },
  },
});

export const redeemAccessCode = defineFlow({
  name: 'redeem_access_code',
  title: 'Redeem an access code',
  description: 'Redeem a one-time access code (each code works once).',
  args: z.object({ code: z.string().min(1).max(200) }),
  inputs: {},
  machine: redeemMachine,
  // The code to redeem is a credential too: recorded as '[redacted]' even though values are audited.
  sensitive: ['code'],
  auditValues: true,
  needsLedger: true,
  implement: ({ tokens }) => ({
    actors: {
      redeemCode: fromPromise(async ({ input }: { input: { code: string } }) => tokens.redeem(input.code, PURPOSE)),
    },
  }),
});
