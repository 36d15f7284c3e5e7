/**
 * `expense_approval`: real four eyes. The requester asks for an expense; a
 * manager (someone with the role `manager`, never the requester) decides;
 * above 1000, once the manager has approved, finance (role `finance`)
 * decides too (finance is never asked after a rejection). The manager is
 * reminded after a day; after 3 days without an answer the decision is
 * escalated to a director (role `director`): it leaves the managers' inbox
 * and appears in the directors'. Each request waits at most 7 days for its
 * first decision (manager or director), and finance gets 7 days of its own;
 * then the request expires. The requester is notified when it is approved,
 * rejected or expires, and may withdraw it while it waits. Plain XState:
 * `after` timers (which `baton serve`'s scheduler fires on time, with no
 * client) and `notify()` actions (delivered from the ledger's outbox as
 * signed webhooks). Needs a ledger: the request is parked there while people
 * decide, on any instance, across days.
 */

import { ask, decision, defineFlow, defineInputs, type InputEvents, notify, type WithdrawEvent } from '@baton/engine';
import { setup } from 'xstate';
import { z } from 'zod';

interface Context {
  amount: number;
  purpose: string;
}

const DAY_MS = 24 * 3600 * 1000;
/** How long a request waits for its first decision (manager, then director), and finance for its own. */
export const DECISION_DAYS = 7;
/** When the manager is reminded, in hours. */
export const REMINDER_HOURS = 24;
/** When an undecided request is escalated to a director, in days. */
export const ESCALATION_DAYS = 3;

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
  director_approval: decision({
    message: ({ context }: { context: Context }) =>
      `Escalated: no manager decided within ${ESCALATION_DAYS} days. Approve an expense of ${context.amount} for "${context.purpose}"?`,
    schema: verdict,
    role: 'director',
  }),
  finance_approval: decision({
    message: ({ context }: { context: Context }) =>
      `The manager approved ${context.amount} for "${context.purpose}". Finance approval is required above 1000.`,
    schema: verdict,
    role: 'finance',
  }),
});

/** What the requester is told at the end (`flow.notification`, `to: 'requester'`). */
const tellRequester = (kind: 'approved' | 'rejected' | 'expired') =>
  notify<Context>(({ context }) => ({
    kind,
    to: 'requester',
    data: { amount: context.amount, purpose: context.purpose },
  }));

/** A first decision (the manager's, or the director's after an escalation): approved, on to finance, or rejected. */
const firstDecision = (rejected: 'rejectedByManager' | 'rejectedByDirector') => [
  {
    guard: ({ event, context }: { event: { content: { approve: boolean } }; context: Context }) =>
      event.content.approve && context.amount > 1000,
    target: '#expense_approval.finance',
  },
  {
    guard: ({ event }: { event: { content: { approve: boolean } } }) => event.content.approve,
    target: '#expense_approval.approved',
  },
  { target: `#expense_approval.${rejected}` },
];

const machine = setup({
  types: {
    context: {} as Context,
    input: {} as Context,
    events: {} as InputEvents<typeof inputs> | WithdrawEvent,
  },
  delays: {
    window: DECISION_DAYS * DAY_MS,
    remind: REMINDER_HOURS * 3600 * 1000,
    escalate: ESCALATION_DAYS * DAY_MS,
  },
}).createMachine({
  id: 'expense_approval',
  context: ({ input }) => input,
  initial: 'deciding',
  states: {
    // The first decision, by a manager or (escalated) a director: 7 days in all, whoever holds it.
    deciding: {
      initial: 'manager',
      after: { window: 'expired' },
      on: { 'baton.withdraw': 'withdrawn' },
      states: {
        manager: {
          meta: ask(inputs, 'manager_approval'),
          after: {
            // A reminder acts in place: the decision stays the manager's.
            remind: {
              actions: notify<Context>(({ context }) => ({
                kind: 'reminder',
                to: 'manager',
                data: { amount: context.amount, purpose: context.purpose },
              })),
            },
            escalate: {
              target: 'director',
              actions: notify<Context>(({ context }) => ({
                kind: 'escalated',
                to: 'director',
                data: { amount: context.amount, purpose: context.purpose },
              })),
            },
          },
          on: { 'input.manager_approval': firstDecision('rejectedByManager') },
        },
        director: {
          meta: ask(inputs, 'director_approval'),
          on: { 'input.director_approval': firstDecision('rejectedByDirector') },
        },
      },
    },
    finance: {
      meta: ask(inputs, 'finance_approval'),
      after: { window: 'expired' },
      on: {
        'input.finance_approval': [
          { guard: ({ event }) => event.content.approve, target: 'approved' },
          { target: 'rejectedByFinance' },
        ],
        'baton.withdraw': 'withdrawn',
      },
    },
    approved: {
      type: 'final',
      entry: tellRequester('approved'),
      output: ({ context }) => `Expense of ${context.amount} approved.`,
    },
    rejectedByManager: {
      type: 'final',
      entry: tellRequester('rejected'),
      output: ({ context }) => `Expense of ${context.amount} rejected by manager.`,
    },
    rejectedByDirector: {
      type: 'final',
      entry: tellRequester('rejected'),
      output: ({ context }) => `Expense of ${context.amount} rejected by director.`,
    },
    rejectedByFinance: {
      type: 'final',
      entry: tellRequester('rejected'),
      output: ({ context }) => `Expense of ${context.amount} rejected by finance.`,
    },
    expired: {
      type: 'final',
      entry: tellRequester('expired'),
      output: ({ context }) => `Expense of ${context.amount} expired: no decision within ${DECISION_DAYS} days.`,
    },
    withdrawn: { type: 'final', output: ({ context }) => `Expense of ${context.amount} withdrawn by the requester.` },
  },
});

export const expenseApproval = defineFlow({
  name: 'expense_approval',
  title: 'Expense approval',
  description:
    'Request an expense approval: a manager decides (a director after 3 days), then finance for amounts over 1000. Someone other than the requester decides (baton_inbox, baton_decide).',
  args: z.object({
    amount: z.number().positive().describe('Amount'),
    purpose: z.string().min(1).max(200).describe('What for'),
  }),
  inputs,
  machine,
  // The line the requester's run-status app shows (MCP Apps, docs/mcp-apps.md).
  summary: (context) => `Expense of ${context.amount} for "${context.purpose}"`,
  // Amounts, purposes and verdicts are not secrets: the audit trail (and `baton inspect`) shows them.
  auditValues: true,
});
