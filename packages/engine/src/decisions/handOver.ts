/**
 * A decider hands a pending decision to another principal (`baton_delegate`,
 * `POST /api/decisions/<id>/delegate`, the decision page's "hand to…" form):
 * the caller must be able to make the decision right now (in its own right, or
 * as an assignee handing it on, or for an absent principal), chosen by the one
 * decision model (`deciding.ts`); the assignee is neither the requester (four
 * eyes) nor the caller. The hand-over is one compare-and-set write of the
 * parked request's version (`LedgerDecisions.handDecision`), re-checked and retried a
 * bounded number of times while the request keeps changing, and audited
 * `via: 'delegate'` with the hander as principal and to whom and why as its
 * message. What the assignee may then do is `delegation.ts`'s.
 */
import type { HandDecisionResult } from '../contract/ledger.js';
import { ATTR, inInstanceSpan, SPAN } from '../telemetry/tracing.js';
import { load } from './access.js';
import { chooseDecision, DECISION_KEY, notRecorded, refusal } from './deciding.js';
import { sealAuthority, shownPrincipal, withAbsences } from './delegation.js';
import { isRequester, principalHash } from './parked.js';
import type { DecisionsPort } from './port.js';
import { isQuorum } from './quorum.js';
import type { DelegateRequest, DelegateResult } from './types.js';

/** The delegate tool's name. */
export const DELEGATE_TOOL = 'baton_delegate';

/** How many times a hand-over is checked and written again while its request keeps changing. */
const MAX_ATTEMPTS = 8;

/** A principal id as a client may name one: printable, no control characters, at most 256 characters. */
const PRINCIPAL = /^[^\p{C}]{1,256}$/u;

/** See `DecisionTools.delegate`. */
export async function delegateDecision(core: DecisionsPort, request: DelegateRequest): Promise<DelegateResult> {
  const { codec } = core;
  const { id, key, to } = request;
  const reason = typeof request.reason === 'string' && request.reason.trim() !== '' ? request.reason.trim() : null;
  if (key !== undefined && (typeof key !== 'string' || !DECISION_KEY.test(key))) {
    return refusal('unknown', 'There is no decision with that key.');
  }
  if (typeof to !== 'string' || !PRINCIPAL.test(to)) {
    return refusal('not_allowed', 'Say whom to hand the decision to ("to": a principal id, at most 256 characters).');
  }
  if (request.reason !== undefined && (typeof request.reason !== 'string' || request.reason.length > 500)) {
    return refusal('not_allowed', 'A reason is text of at most 500 characters.');
  }
  const caller = await withAbsences(core, request.context);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const loaded = await load(core, DELEGATE_TOOL, id);
    if ('refusal' in loaded) return refusal(loaded.reason!, loaded.refusal!.message);
    const { ledger, row, flow, blob } = loaded;
    const chosen = chooseDecision(
      core,
      row,
      flow,
      blob,
      await ledger.decisions.listDecisions({ id: row.id }),
      key,
      caller,
    );
    if ('refusal' in chosen) return chosen.refusal;
    const { record } = chosen;
    if (isQuorum(flow, record.key)) {
      return refusal(
        'not_allowed',
        `The decision "${record.key}" on request ${row.id} needs several approvers, each voting in their own right: it cannot be handed over.`,
      );
    }
    if (to === caller.principal) return refusal('not_allowed', 'You cannot hand a decision to yourself.');
    if (isRequester(codec, blob, to)) {
      return refusal(
        'not_allowed',
        `Not handed: ${to} requested ${row.id}, and a requester never decides their own request (four eyes).`,
      );
    }
    const names = core.decisions.storePrincipalNames;
    const authority = chosen.onBehalfOf ?? { principal: caller.principal, roles: caller.roles ?? [] };
    const toHash = principalHash(codec, to);
    const now = core.now();
    const handover = {
      to: toHash,
      toName: names ? to : null,
      by: principalHash(codec, caller.principal),
      byName: names ? caller.principal : null,
      onBehalfOf: principalHash(codec, authority.principal),
      onBehalfOfName: names ? authority.principal : null,
      authority: sealAuthority(codec, ['handover', row.id, record.key, toHash], authority.principal, authority.roles),
      reason,
      at: now,
    };
    // Traced (with an SDK only) in the instance's trace, like a decision recorded.
    const written: HandDecisionResult = await inInstanceSpan(
      SPAN.handOver,
      () => blob.s.tc,
      () => ({
        [ATTR.flow]: flow.name,
        [ATTR.instance]: row.id,
        [ATTR.decisionKey]: record.key,
        [ATTR.via]: 'delegate',
        [ATTR.pseudoUser]: codec.digest(caller.principal, 'audit-principal'),
      }),
      () =>
        ledger.decisions.handDecision({
          id: row.id,
          key: record.key,
          handover,
          now,
          expectedVersion: row.version,
        }),
    );
    if (written.status === 'conflict') continue;
    if (written.status !== 'handed') {
      switch (written.status) {
        case 'already_decided':
          return refusal(
            'lost_race',
            `The decision "${record.key}" on request ${row.id} was made first; it was not handed over.`,
          );
        case 'closed':
          return notRecorded(row.id, record.key, (await ledger.requests.getRequest(row.id))?.status);
        case 'expired':
          return refusal(
            'expired',
            `The decision "${record.key}" on request ${row.id} expired: it can no longer be handed over.`,
          );
        default:
          return refusal('unknown', `Request ${row.id} has no decision "${record.key}".`);
      }
    }
    const shownTo = names ? to : codec.digest(to, 'audit-principal');
    await core.audit({
      flow,
      fid: row.id,
      round: blob.r + 1,
      started: now,
      principal: caller.principal,
      via: 'delegate',
      before: blob.s.s[0],
      after: blob.s.s[0],
      path: [],
      asked: [],
      received: [],
      outcome: 'input_required',
      message: `Handed "${record.key}" to ${shownTo}${chosen.onBehalfOf ? ` (for ${chosen.onBehalfOf.shown})` : ''}${reason ? `: ${reason}` : ''}`,
    });
    const shown = shownPrincipal(toHash, handover.toName);
    return {
      status: 'handed',
      id: row.id,
      key: record.key,
      flow: flow.name,
      to: shown,
      message: `Handed the decision "${record.key}" on request ${row.id} (${flow.name}) to ${shown}. They may make it for ${shownPrincipal(handover.onBehalfOf, handover.onBehalfOfName)}; you no longer may while it is with them.`,
    };
  }
  return refusal('lost_race', `Not handed: request ${id} kept changing. Try again in a moment.`);
}
