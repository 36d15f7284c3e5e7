/**
 * The decision pages' engine port on the runner's one-shot decision entry:
 * `runner.inbox`, `runner.describeDecision` (a pending decision as data, with
 * the same checks as `baton_decide`, nothing written) and
 * `runner.answerDecision` (validated, recorded once, the flow advanced,
 * audited `via: 'decide_page'`), and `runner.delegateDecision` for the
 * "hand to…" form. The engine's refusal reasons become the
 * pages' (four eyes told apart from a missing role, so that the page can say
 * which), and who made a decision is "you" when it was the caller; a provider principal
 * (`<iss>#<sub>`, stored when `--store-principal-names` is on) shows as its `sub`.
 */
import type { DecidedBy, DecisionRefusal, DecisionView as EngineDecisionView, Runner } from '@baton/engine';
import { refusalReasonOf } from '../mcp/decisionRefusals.js';
import {
  type DecisionMade,
  type PageCaller,
  type PageDecisions,
  pageQuorum,
  type Refused,
  shownPrincipal,
} from './decisionPort.js';

export { shownPrincipal } from './decisionPort.js';

/**
 * The principal a page names by its `sub` alone: at the signed-in person's issuer (`<iss>#<sub>`),
 * as the page shows principals; a full principal, or one off an identity provider, as given.
 */
function sameIssuer(caller: string, to: string): string {
  const at = caller.lastIndexOf('#');
  return !to.includes('#') && at > 0 && /^https?:\/\//.test(caller) ? `${caller.slice(0, at + 1)}${to}` : to;
}

/** Who made a decision, as the page says it. */
function made(by: DecidedBy): DecisionMade {
  return {
    key: by.key,
    by: by.you ? 'you' : shownPrincipal(by.decider),
    ...(by.onBehalfOf !== undefined ? { for: shownPrincipal(by.onBehalfOf) } : {}),
    ...(by.decidedAt !== undefined ? { at: by.decidedAt } : {}),
  };
}

/** The page's sentences for a decision made for someone else, and for one handed over. */
function delegationFacts(view: EngineDecisionView): { delegated?: string; handedOver?: string } {
  const d = view.delegated;
  const h = view.handover;
  const why = (reason: string | undefined) => (reason ? `: ${reason}` : '');
  return {
    ...(d
      ? {
          delegated:
            d.kind === 'handover'
              ? `for ${shownPrincipal(d.onBehalfOf)} (handed to you by ${shownPrincipal(d.by ?? d.onBehalfOf)}${why(d.reason)})`
              : `for ${shownPrincipal(d.onBehalfOf)}, who is away${why(d.reason)}`,
        }
      : {}),
    ...(h
      ? {
          handedOver: `handed by ${shownPrincipal(h.by)} to ${shownPrincipal(h.to)}${h.reason ? ` (${h.reason})` : ''}`,
        }
      : {}),
  };
}

function refused(refusal: DecisionRefusal): Refused {
  return {
    type: 'refused',
    reason: refusalReasonOf(refusal),
    message: refusal.message,
    ...(refusal.decidedBy ? { decided: made(refusal.decidedBy) } : {}),
    ...(refusal.keys ? { keys: [...refusal.keys] } : {}),
  };
}

/** The port on `runner`. */
export function engineDecisions(runner: Runner): PageDecisions {
  const context = (caller: PageCaller) => ({
    principal: caller.principal,
    roles: caller.roles,
    ...(caller.displayName ? { displayName: caller.displayName } : {}),
  });
  return {
    inbox: (caller) => runner.inbox(context(caller)),
    async describe({ id, key, caller }) {
      const described = await runner.describeDecision({ id, ...(key ? { key } : {}), context: context(caller) });
      if (described.status === 'refused') return refused(described);
      const view = described.decision;
      const args = view.arguments;
      const title = runner.flows.get(view.flow)?.title;
      return {
        type: 'pending',
        view: {
          id: view.id,
          key: view.key,
          flow: view.flow,
          ...(title ? { flowTitle: title } : {}),
          message: view.message,
          requester: shownPrincipal(view.requester),
          ...(typeof args === 'object' && args !== null && !Array.isArray(args)
            ? { args: args as Record<string, unknown> }
            : {}),
          requestedAt: view.requestedAt,
          ...(view.deadline !== undefined ? { deadline: view.deadline } : {}),
          requestedSchema: view.requestedSchema,
          decisions: view.decided.map(made),
          ...(view.quorum ? { quorum: pageQuorum(view.quorum) } : {}),
          ...delegationFacts(view),
        },
      };
    },
    async delegate({ id, key, caller, to, reason }) {
      const handed = await runner.delegateDecision({
        id,
        ...(key ? { key } : {}),
        to: sameIssuer(caller.principal, to),
        ...(reason ? { reason } : {}),
        context: context(caller),
      });
      return handed.status === 'handed' ? { type: 'handed', message: handed.message } : refused(handed);
    },
    async answer({ id, key, caller, answer }) {
      const answered = await runner.answerDecision({
        id,
        ...(key ? { key } : {}),
        context: context(caller),
        answer,
        channel: 'page',
      });
      if (answered.status === 'refused') return refused(answered);
      if (answered.status === 'invalid') {
        return { type: 'invalid', message: answered.problem, issues: answered.issues.map((i) => ({ ...i })) };
      }
      return { type: answered.status, message: answered.message };
    },
  };
}
