/**
 * `expense_approval`: the manager approves (with an optional comment); an
 * approved expense over 1000 then needs finance's approval in a second round.
 */

import { ask, defineFlow, defineInputs, form, type InputEvents } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

interface Context {
  amount: number;
  purpose: string;
}

const inputs = defineInputs({
  manager_approval: form({
    message: ({ context }: { context: Context }) => `Approve an expense of ${context.amount} for "${context.purpose}"?`,
    schema: z.object({ approve: z.boolean(), comment: z.string().max(500).optional() }),
  }),
  finance_approval: form({
    message: ({ context }: { context: Context }) =>
      `The manager approved ${context.amount} for "${context.purpose}". Finance approval is required above 1000.`,
    schema: z.object({ approve: z.boolean() }),
  }),
});

const approved = (event: { action: string; content?: { approve: boolean } }) =>
  event.action === 'accept' && event.content?.approve === true;

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as Context,
    events: {} as InputEvents<typeof inputs>,
  },
}).createMachine({
  id: 'expense_approval',
  context: ({ input }) => input,
  initial: 'manager',
  states: {
    manager: {
      meta: ask(inputs, 'manager_approval'),
      on: {
        'input.manager_approval': [
          { guard: ({ event, context }) => approved(event) && context.amount > 1000, target: 'finance' },
          { guard: ({ event }) => approved(event), target: 'approved' },
          { target: 'rejectedByManager' },
        ],
      },
    },
    finance: {
      meta: ask(inputs, 'finance_approval'),
      on: {
        'input.finance_approval': [
          { guard: ({ event }) => approved(event), target: 'approved' },
          { target: 'rejectedByFinance' },
        ],
      },
    },
    approved: { type: 'final', output: ({ context }) => `Expense of ${context.amount} approved.` },
    rejectedByManager: { type: 'final', output: ({ context }) => `Expense of ${context.amount} rejected by manager.` },
    rejectedByFinance: { type: 'final', output: ({ context }) => `Expense of ${context.amount} rejected by finance.` },
  },
});

export const expenseApproval = defineFlow({
  name: 'expense_approval',
  title: 'Expense approval',
  description: 'Approve an expense: the manager, then finance for amounts over 1000.',
  args: z.object({
    amount: z.number().positive().describe('Amount'),
    purpose: z.string().min(1).max(200).describe('What for'),
  }),
  inputs,
  machine,
});
