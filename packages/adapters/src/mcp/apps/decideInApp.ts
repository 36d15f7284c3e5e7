/**
 * `baton_decide` for a client that declared MCP Apps: the same tool and the
 * same rules, answered in the two steps a form in the conversation needs
 * instead of one form elicitation. `baton_decide { id, key? }` answers the
 * pending decision as data (who asked, what, the flow's title and
 * arguments when the flow shows values, requested and deadline times, the
 * votes so far of a quorum, a delegation or hand-over, and the decision's
 * schema), which the decision app renders; `baton_decide { id, key?, answer:
 * { action, content? } }` records the app's answer once through the engine's
 * one-shot entry (`runner.answerDecision`, the same checks, validation and
 * compare-and-set as every other channel), audited with the channel `app`.
 * Refusals (four eyes, role, already decided, expired, ...) are tool errors
 * with the engine's sentence and, in `structuredContent`, the reason and the
 * title the decision page shows. The `app` channel is what the client says
 * (any client that declares the extension may send an `answer`), like the
 * difference between `decide_api` and `decide_page`: it grants nothing, since
 * who decides comes from the verified principal and every rule is the
 * engine's.
 */
import type { DecisionCaller, DecisionRefusal, DecisionView, Runner } from '@baton/engine';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { withCachedJsonSchema } from '../cachedJsonSchema.js';
import { REFUSAL_TITLES, refusalReasonOf } from '../decisionRefusals.js';

/** The arguments of `baton_decide` as a client that declared MCP Apps sees them: `answer` added. */
export function appDecideArguments(id: z.ZodString, key: z.ZodOptional<z.ZodString>) {
  return withCachedJsonSchema(
    z.object({
      id,
      key,
      answer: z
        .object({
          action: z.enum(['accept', 'decline']),
          content: z.record(z.string(), z.unknown()).optional(),
        })
        .optional()
        .describe(
          "The answer, when the decision app sends it: accept with the form's content, or decline (nothing recorded). Without it, the pending decision is answered as data for the app.",
        ),
    }),
  );
}

/** `baton_decide`'s description for an MCP Apps client. */
export const APP_DECIDE_DESCRIPTION =
  'Show a decision on a request by someone else (see baton_inbox) in the decision app: who asked, what, the deadline, approvals so far and its form. The app sends the approver\'s answer back as `answer`; it is recorded once and the request moves on at once (the result starts with "Recorded"). Refused, as a tool error saying why, when you may not decide it (your own request, or not your role), the id is unknown, or it was already decided, expired or withdrawn.';

/** What `baton_decide` receives from an MCP Apps client. */
export interface AppDecideArgs {
  readonly id: string;
  readonly key?: string;
  readonly answer?: { readonly action: 'accept' | 'decline'; readonly content?: Record<string, unknown> };
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A pending decision on the wire of the app: the engine's view, ISO times, the flow's title. */
function appView(runner: Runner, view: DecisionView) {
  const title = runner.flows.get(view.flow)?.title;
  return {
    id: view.id,
    key: view.key,
    flow: view.flow,
    ...(title ? { flowTitle: title } : {}),
    message: view.message,
    ...(view.role ? { role: view.role } : {}),
    requester: view.requester,
    ...(typeof view.arguments === 'object' && view.arguments !== null && !Array.isArray(view.arguments)
      ? { args: view.arguments }
      : {}),
    requestedAt: iso(view.requestedAt),
    ...(view.deadline !== undefined ? { deadline: iso(view.deadline) } : {}),
    requestedSchema: view.requestedSchema,
    decided: view.decided.map((d) => ({
      key: d.key,
      decider: d.decider,
      you: d.you,
      ...(d.onBehalfOf ? { onBehalfOf: d.onBehalfOf } : {}),
      ...(d.decidedAt !== undefined ? { decidedAt: iso(d.decidedAt) } : {}),
    })),
    ...(view.quorum
      ? {
          quorum: {
            required: view.quorum.required,
            approvals: view.quorum.approvals,
            needed: view.quorum.needed,
            votes: view.quorum.votes.map((v) => ({
              decider: v.decider,
              approves: v.approves,
              you: v.you,
              decidedAt: iso(v.decidedAt),
            })),
          },
        }
      : {}),
    ...(view.delegated ? { delegated: { ...view.delegated } } : {}),
    ...(view.handover ? { handover: { ...view.handover, at: iso(view.handover.at) } } : {}),
  };
}

function refusalResult(refusal: DecisionRefusal): CallToolResult {
  const reason = refusalReasonOf(refusal);
  const by = refusal.decidedBy
    ? ` It was decided by ${refusal.decidedBy.you ? 'you' : refusal.decidedBy.decider}.`
    : '';
  const message = `${refusal.message}${by}`;
  return {
    content: [{ type: 'text', text: message }],
    structuredContent: {
      status: 'refused',
      reason,
      title: REFUSAL_TITLES[reason],
      message,
      ...(refusal.keys ? { keys: [...refusal.keys] } : {}),
    },
    isError: true,
  };
}

/** The summary line the model reads of a pending decision shown in the app. */
function viewText(view: DecisionView): string {
  const deadline = view.deadline === undefined ? '' : `; decide by ${iso(view.deadline)}`;
  const quorum = view.quorum ? `; ${view.quorum.approvals} of ${view.quorum.required} approvals` : '';
  return `Decision ${view.key} on request ${view.id} (${view.flow}), asked by ${view.requester}${deadline}${quorum}: ${view.message}. The approver answers it in the decision app.`;
}

/** Answer `baton_decide` for an MCP Apps client: the decision as data, or the app's answer recorded. */
export async function decideInApp(
  runner: Runner,
  context: DecisionCaller,
  args: AppDecideArgs,
): Promise<CallToolResult> {
  const address = { id: args.id, ...(args.key !== undefined ? { key: args.key } : {}), context };
  if (args.answer === undefined) {
    const described = await runner.describeDecision(address);
    if (described.status === 'refused') return refusalResult(described);
    return {
      content: [{ type: 'text', text: viewText(described.decision) }],
      structuredContent: { decision: appView(runner, described.decision) },
    };
  }
  const answered = await runner.answerDecision({ ...address, answer: args.answer, channel: 'app' });
  switch (answered.status) {
    case 'refused':
      return refusalResult(answered);
    case 'invalid':
      return {
        content: [{ type: 'text', text: `Not recorded: ${answered.problem}` }],
        structuredContent: {
          status: 'invalid',
          problem: answered.problem,
          issues: answered.issues.map((i) => ({ ...i })),
        },
        isError: true,
      };
    default:
      return {
        content: [{ type: 'text', text: answered.message }],
        structuredContent: { status: answered.status, message: answered.message },
      };
  }
}
