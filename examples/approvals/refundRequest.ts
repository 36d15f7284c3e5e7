/**
 * `refund_request`: the requester asks for a refund of an order and gives a
 * reason (a form: damaged, late or other, plus a short note). Above 200, a
 * supervisor (role `supervisor`, never the requester) decides within 24 hours
 * (a durable `after`); then the durable step `issueRefund` issues the refund
 * through a payment provider, here an in-process simulation that returns a
 * refund id and is idempotent per key. The step passes the provider its
 * idempotency key (stable across retries, rounds and server instances) and
 * its result is recorded in the ledger, so a retried, replayed or lost round
 * never issues a second refund; a provider error is retried twice with
 * backoff. Rejected, expired, withdrawn and cancelled requests end with a text
 * that says so. Needs a ledger: the request is parked there while the
 * supervisor decides, and the refund's result is recorded there.
 */

import { randomBytes } from 'node:crypto';
import {
  ask,
  decision,
  defineFlow,
  defineInputs,
  form,
  type InputEvents,
  step,
  type WithdrawEvent,
} from '@baton/engine';
import { assign, setup } from 'xstate';
import { z } from 'zod';

/** Above this amount a supervisor must approve the refund. */
export const SUPERVISOR_ABOVE = 200;
/** How long the supervisor may take. */
export const SUPERVISOR_HOURS = 24;
const SUPERVISOR_MS = SUPERVISOR_HOURS * 3600 * 1000;

/** What the payment provider is asked: `key` makes a repeated request return the same refund. */
export interface RefundOrder {
  key: string;
  orderId: string;
  amount: number;
}

/**
 * A simulated payment provider, in process: it issues a refund once per idempotency key and
 * returns its id (`RF-` and 10 hex digits). A real flow would call its provider's API here.
 */
export const simulatedPayments = {
  issued: new Map<string, { refundId: string; orderId: string; amount: number }>(),
  async issueRefund(order: RefundOrder): Promise<string> {
    const known = this.issued.get(order.key);
    if (known) return known.refundId;
    const refundId = `RF-${randomBytes(5).toString('hex').toUpperCase()}`;
    this.issued.set(order.key, { refundId, orderId: order.orderId, amount: order.amount });
    return refundId;
  },
  /** The refunds issued for an order (for tests and the demo). */
  refundsFor(orderId: string): string[] {
    return [...this.issued.values()].filter((r) => r.orderId === orderId).map((r) => r.refundId);
  },
};

/**
 * The durable step that issues the refund: once per request, whatever happens to rounds and
 * servers (its result is recorded in the ledger); the provider sees the same idempotency key on
 * every attempt, so even a step run again after a lost server issues one refund.
 */
export const issueRefund = step(
  'issueRefund',
  async ({ input, idempotencyKey }: { input: { orderId: string; amount: number }; idempotencyKey: string }) =>
    simulatedPayments.issueRefund({ key: idempotencyKey, orderId: input.orderId, amount: input.amount }),
  { retry: { attempts: 3, backoffMs: 500 } },
);

interface Context {
  orderId: string;
  amount: number;
  reason: string;
  refundId: string;
}

const inputs = defineInputs({
  reason: form({
    message: ({ context }: { context: Context }) => `Why should order ${context.orderId} be refunded?`,
    schema: z.object({
      reason: z.enum(['damaged', 'late', 'other']).describe('Reason'),
      note: z.string().max(300).optional().describe('Note (optional)'),
    }),
  }),
  supervisor: decision({
    message: ({ context }: { context: Context }) =>
      `Refund ${context.amount} for order ${context.orderId} (reason: ${context.reason})?`,
    schema: z.object({
      approve: z.boolean().describe('Approve the refund?'),
      comment: z.string().max(500).optional().describe('Comment (optional)'),
    }),
    role: 'supervisor',
  }),
});

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as { orderId: string; amount: number },
    events: {} as InputEvents<typeof inputs> | WithdrawEvent,
  },
  delays: { supervisorWindow: SUPERVISOR_MS },
  actors: { issueRefund },
}).createMachine({
  id: 'refund_request',
  context: ({ input }) => ({ ...input, reason: '', refundId: '' }),
  initial: 'reason',
  states: {
    reason: {
      meta: ask(inputs, 'reason'),
      on: {
        'input.reason': [
          {
            guard: ({ event, context }) => event.action === 'accept' && context.amount > SUPERVISOR_ABOVE,
            target: 'supervisor',
            actions: assign({ reason: ({ event }) => (event.action === 'accept' ? event.content.reason : '') }),
          },
          {
            guard: ({ event }) => event.action === 'accept',
            target: 'issuing',
            actions: assign({ reason: ({ event }) => (event.action === 'accept' ? event.content.reason : '') }),
          },
          { target: 'cancelled' },
        ],
      },
    },
    supervisor: {
      meta: ask(inputs, 'supervisor'),
      after: { supervisorWindow: 'expired' },
      on: {
        'input.supervisor': [
          { guard: ({ event }) => event.content.approve, target: 'issuing' },
          { target: 'rejected' },
        ],
        'baton.withdraw': 'withdrawn',
      },
    },
    issuing: {
      invoke: {
        id: 'issueRefund',
        src: 'issueRefund',
        input: ({ context }) => ({ orderId: context.orderId, amount: context.amount }),
        onDone: { target: 'issued', actions: assign({ refundId: ({ event }) => event.output }) },
      },
    },
    issued: { type: 'final', output: ({ context }) => `Refund ${context.refundId} issued for ${context.orderId}.` },
    rejected: {
      type: 'final',
      output: ({ context }) => `Refund of ${context.amount} for ${context.orderId} rejected by the supervisor.`,
    },
    expired: {
      type: 'final',
      output: ({ context }) =>
        `Refund of ${context.amount} for ${context.orderId} expired: no supervisor decision within ${SUPERVISOR_HOURS} hours.`,
    },
    withdrawn: {
      type: 'final',
      output: ({ context }) => `Refund of ${context.amount} for ${context.orderId} withdrawn by the requester.`,
    },
    cancelled: {
      type: 'final',
      output: ({ context }) => `Refund for ${context.orderId} cancelled: no reason was given.`,
    },
  },
});

export const refundRequest = defineFlow({
  name: 'refund_request',
  title: 'Refund request',
  description: `Request a refund of an order, with a reason. Above ${SUPERVISOR_ABOVE}, a supervisor decides within ${SUPERVISOR_HOURS} hours (baton_inbox, baton_decide).`,
  args: z.object({
    orderId: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,40}$/)
      .describe('Order id'),
    amount: z.number().positive().max(1_000_000).describe('Amount to refund'),
  }),
  inputs,
  machine,
});
