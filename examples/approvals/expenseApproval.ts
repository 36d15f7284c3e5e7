/**
 * `expense_approval`: real four eyes. The requester asks for an expense; a
 * manager (someone with the role `manager`, never the requester) decides;
 * above 1000, once the manager has approved, finance (role `finance`)
 * decides too (finance is never asked after a manager rejection). Each
 * decision waits at most 7 days, then the request expires; the requester may
 * withdraw it while it waits. Needs a ledger: the request is parked there
 * while people decide, on any instance, across days.
 */

import { ask, decision, defineFlow, defineInputs, type InputEvents, type WithdrawEvent } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

interface Context {
  amount: number;
  purpose: string;
}

/** How long each decision may take. */
export const DECISION_DAYS = 7;
const DECISION_MS = DECISION_DAYS * 24 * 3600 * 1000;

const verdict = z.object({
  approve: z.boolean().describe('Approve?'),
  comment: z.string().max(500).optional().describe('Comment (optional)'),
});

const inputs = defineInputs({
  manager_approval: decision({
    message: ({ context }: { context: Context }) => `Approve an expense of ${context.amount} for "${context.purpose}"?`,
    schema: verdict,
    role: 'manager',
  }),
  finance_approval: decision({
    message: ({ context }: { context: Context }) =>
      `The manager approved ${context.amount} for "${context.purpose}". Finance approval is required above 1000.`,
    schema: verdict,
    role: 'finance',
  }),
});

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as Context,
    events: {} as InputEvents<typeof inputs> | WithdrawEvent,
  },
  delays: { decisionWindow: DECISION_MS },
}).createMachine({
  id: 'expense_approval',
  context: ({ input }) => input,
  initial: 'manager',
  states: {
    manager: {
      meta: ask(inputs, 'manager_approval'),
      after: { decisionWindow: 'expired' },
      on: {
        'input.manager_approval': [
          { guard: ({ event, context }) => event.content.approve && context.amount > 1000, target: 'finance' },
          { guard: ({ event }) => event.content.approve, target: 'approved' },
          { target: 'rejectedByManager' },
        ],
        'baton.withdraw': 'withdrawn',
      },
    },
    finance: {
      meta: ask(inputs, 'finance_approval'),
      after: { decisionWindow: 'expired' },
      on: {
        'input.finance_approval': [
          { guard: ({ event }) => event.content.approve, target: 'approved' },
          { target: 'rejectedByFinance' },
        ],
        'baton.withdraw': 'withdrawn',
      },
    },
    approved: { type: 'final', output: ({ context }) => `Expense of ${context.amount} approved.` },
    rejectedByManager: { type: 'final', output: ({ context }) => `Expense of ${context.amount} rejected by manager.` },
    rejectedByFinance: { type: 'final', output: ({ context }) => `Expense of ${context.amount} rejected by finance.` },
    expired: {
      type: 'final',
      output: ({ context }) => `Expense of ${context.amount} expired: no decision within ${DECISION_DAYS} days.`,
    },
    withdrawn: { type: 'final', output: ({ context }) => `Expense of ${context.amount} withdrawn by the requester.` },
  },
});

export const expenseApproval = defineFlow({
  name: 'expense_approval',
  title: 'Expense approval',
  description:
    'Request an expense approval: a manager decides, then finance for amounts over 1000. Someone other than the requester decides (baton_inbox, baton_decide).',
  args: z.object({
    amount: z.number().positive().describe('Amount'),
    purpose: z.string().min(1).max(200).describe('What for'),
  }),
  inputs,
  machine,
  // Amounts, purposes and verdicts are not secrets: the audit trail (and `baton inspect`) shows them.
  auditValues: true,
});
