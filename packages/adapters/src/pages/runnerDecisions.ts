/**
 * The decision pages' engine port on the runner's decision tools (`inbox`,
 * and `decide` played as its two rounds in one go): the first round checks
 * who may decide and gives the message and the form; the second records the
 * answer once, or asks again saying why it was not accepted. Refusals are
 * the engine's sentences, sorted into reason codes.
 */
import type { ElicitationSchema, RoundOutcome, Runner } from '@baton/engine';
import type { Answered, Described, PageDecisions, RefusalReason } from './decisionPort.js';

/** The capabilities a page has: it shows forms. */
const FORM_ONLY = { form: true, url: false, sampling: false, roots: false } as const;

/** The reason code of one of the engine's refusal sentences. */
export function reasonOf(message: string): RefusalReason {
  if (/four eyes/.test(message)) return 'four_eyes';
  if (/may not make|needs the role|does not allow/.test(message)) return 'not_allowed';
  if (/already been made|made by someone else/.test(message)) return 'decided';
  if (/expired/.test(message)) return 'expired';
  if (/say which with "key"/.test(message)) return 'ambiguous';
  if (/has ended|withdrawn|closed|ended first|ended by an operator|nothing left/.test(message)) return 'ended';
  if (/cannot be read|keeps no requests|kept changing/.test(message)) return 'unavailable';
  return 'unknown';
}

const refused = (message: string) => ({ type: 'refused', reason: reasonOf(message), message }) as const;

type Form = { message: string; requestedSchema: ElicitationSchema };

/** The form a first `decide` round asks, or its refusal. */
function formOf(outcome: RoundOutcome): { form: Form; requestState: string } | { message: string } {
  if (outcome.type === 'error') return { message: outcome.message };
  if (outcome.type !== 'input_required') return { message: 'This decision cannot be made here.' };
  const asked = outcome.inputRequests.decision as { params?: Form } | undefined;
  if (!asked?.params || !outcome.requestState) return { message: 'This decision cannot be made here.' };
  return { form: asked.params, requestState: outcome.requestState };
}

/** The port on `runner`. */
export function runnerDecisions(runner: Runner): PageDecisions {
  return {
    inbox: (caller) => runner.inbox({ principal: caller.principal, roles: caller.roles }),
    async describe({ id, key, caller }) {
      const context = { principal: caller.principal, roles: caller.roles, capabilities: FORM_ONLY };
      const first = formOf(await runner.decide({ id, ...(key ? { key } : {}), context }));
      if ('message' in first) return refused(first.message);
      const item = (await runner.inbox(context)).find((i) => i.id === id && (key === undefined || i.key === key));
      return {
        type: 'pending',
        view: {
          id,
          key: item?.key ?? key ?? '',
          flow: item?.flow ?? '',
          message: first.form.message,
          requestedSchema: first.form.requestedSchema,
          ...(item?.requestedAt !== undefined ? { requestedAt: item.requestedAt } : {}),
          ...(item?.deadline !== undefined ? { deadline: item.deadline } : {}),
          decisions: [],
        },
      };
    },
    async answer({ id, key, caller, answer }): Promise<Answered> {
      const context = { principal: caller.principal, roles: caller.roles, capabilities: FORM_ONLY };
      const request = { id, ...(key ? { key } : {}), context };
      const first = formOf(await runner.decide(request));
      if ('message' in first) return refused(first.message);
      const second = await runner.decide({
        ...request,
        requestState: first.requestState,
        inputResponses: { decision: { action: answer.action, ...(answer.content ? { content: answer.content } : {}) } },
      });
      if (second.type === 'error') return refused(second.message);
      if (second.type === 'input_required') {
        const again = formOf(second);
        const text = 'form' in again ? again.form.message : again.message;
        const why = /not accepted \((.*)\)\. Please answer again\./s.exec(text)?.[1] ?? text;
        return { type: 'invalid', message: why };
      }
      const text = second.result.content.map((part) => ('text' in part ? part.text : '')).join(' ');
      return /^Recorded/.test(text) ? { type: 'recorded', message: text } : { type: 'declined', message: text };
    },
  };
}
