/**
 * Why a decision cannot be shown or made, as people read it: the engine's
 * refusal reasons folded into the few a person tells apart (four eyes told
 * apart from a missing role), and the title the decision page and the
 * decision app (`apps/`) show above the engine's sentence. A leaf module, so
 * that both `pages/` and `mcp/` read one table.
 */
import type { DecisionRefusal } from '@baton/engine';

/** Why a decision cannot be shown or made. */
export type RefusalReason =
  /** The caller asked for this request: a requester never decides their own (four eyes). */
  | 'four_eyes'
  /** The caller lacks the role, or the flow's `may` says no. */
  | 'not_allowed'
  /** No such request or decision (or not one this server serves). */
  | 'unknown'
  /** Someone has made it already. */
  | 'decided'
  /** Its deadline passed. */
  | 'expired'
  /** The request ended (completed, withdrawn, terminated) or the decision was closed. */
  | 'ended'
  /** The caller may make several decisions on the request: a `key` must say which. */
  | 'ambiguous'
  /** The engine cannot answer now (ledger unreachable, request unreadable here). */
  | 'unavailable';

/** A refusal's title, shown above the engine's sentence. */
export const REFUSAL_TITLES: Readonly<Record<RefusalReason, string>> = {
  four_eyes: 'You cannot decide your own request',
  not_allowed: 'You may not make this decision',
  unknown: 'No such decision',
  decided: 'Already decided',
  expired: 'This decision has expired',
  ended: 'Nothing left to decide',
  ambiguous: 'Which decision?',
  unavailable: 'Not available right now',
};

/** The reason a person reads for one of the engine's refusals. */
export function refusalReasonOf(refusal: DecisionRefusal): RefusalReason {
  switch (refusal.reason) {
    case 'not_allowed':
      return refusal.ownRequest ? 'four_eyes' : 'not_allowed';
    case 'already_decided':
    case 'lost_race':
    case 'already_voted':
      return 'decided';
    case 'withdrawn':
    case 'ended':
      return 'ended';
    case 'ambiguous_key':
      return 'ambiguous';
    case 'unknown':
    case 'expired':
      return refusal.reason;
    default:
      return 'unavailable';
  }
}
