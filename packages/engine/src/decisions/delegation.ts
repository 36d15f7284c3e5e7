/**
 * Who may make a decision for someone else: the delegation half of the one
 * decision model (`deciding.ts` asks {@link mayMake} where it used to ask
 * `allowed`). Two kinds of grant "Y may act for X". A hand-over: a decider X
 * who may make a pending decision hands it to Y (`handOver.ts`); the decision
 * row then names Y as its assignee and carries X's principal and roles, sealed
 * (X's right was checked at the hand-over and is checked again, on X's roles,
 * when Y decides). While it is handed on, X and whoever handed it last may no
 * longer make it; others allowed in their own right still may. An absence: an
 * operator made Y the delegate of X for a time range, with X's roles stated
 * (`operators/absences.ts`); while it is in force, Y may make any decision X
 * with those roles may make. Four eyes holds either way: neither Y nor X is
 * the requester. A quorum decision is voted on in one's own right only: it
 * is never handed over and no absence reaches it. The caller's absences are read once per call
 * ({@link withAbsences}); a decision made so records on whose behalf.
 */
import type { Flow } from '../authoring/flowTypes.js';
import { canonicalJson } from '../codec/canonicalJson.js';
import type { RequestStateCodec } from '../codec/types.js';
import type { DecisionRecord, DelegationRecord, HandOver } from '../contract/ledger.js';
import { allowed } from './access.js';
import { isRequester, type ParkedBlob, principalHash } from './parked.js';
import type { DecisionsPort } from './port.js';
import { isQuorum } from './quorum.js';
import type { DecisionCaller, DecisionView, DelegatedFor } from './types.js';

/** The principal whose right a delegate uses, with the roles it uses, and how the grant came. */
export interface Authority {
  readonly principal: string;
  readonly roles: readonly string[];
  readonly kind: 'handover' | 'absence';
  /** How the runner shows that principal (its name when names are stored, else its keyed hash). */
  readonly shown: string;
  /** `handover`: who handed it, shown so. */
  readonly by?: string;
  readonly reason?: string;
}

/** A caller with the absences it is the delegate of, in force now (see {@link withAbsences}). */
export type DelegatedCaller = DecisionCaller & { readonly absences?: readonly Authority[] };

/** Whether the caller may make a decision: in its own right (`{}`), for someone (`{ onBehalfOf }`), or why not. */
export type Right = { readonly onBehalfOf?: Authority } | string;

/** What an authority's seal is bound to: a hand-over to one assignee of one decision, or one absence. */
function authorityBinding(where: readonly string[]): string {
  return canonicalJson(['authority', ...where]);
}

/** Seal a principal and its roles for a hand-over (`['handover', id, key, assignee hash]`) or an absence (`['absence', id]`). */
export function sealAuthority(
  codec: RequestStateCodec,
  where: readonly string[],
  principal: string,
  roles: readonly string[],
): string {
  return codec.sealBlob(JSON.stringify({ p: principal, r: roles }), 'authority', authorityBinding(where));
}

/** Open a sealed authority; `undefined` when it does not open (altered, or its key left the ring). */
export function openAuthority(
  codec: RequestStateCodec,
  where: readonly string[],
  sealed: string,
): { principal: string; roles: string[] } | undefined {
  try {
    const opened = JSON.parse(codec.openBlob(sealed, 'authority', authorityBinding(where))) as {
      p?: unknown;
      r?: unknown;
    };
    if (typeof opened.p !== 'string' || !Array.isArray(opened.r)) return undefined;
    return { principal: opened.p, roles: opened.r.filter((r): r is string => typeof r === 'string') };
  } catch {
    return undefined;
  }
}

/** How the runner shows a principal stored as a keyed hash and maybe a name. */
export function shownPrincipal(hash: string, name: string | null | undefined): string {
  return name ?? hash;
}

/** The authority of a decision's hand-over, when it is handed and the seal opens. */
function handedAuthority(codec: RequestStateCodec, record: DecisionRecord, handover: HandOver): Authority | undefined {
  const opened = openAuthority(codec, ['handover', record.id, record.key, handover.to], handover.authority);
  return (
    opened && {
      ...opened,
      kind: 'handover',
      shown: shownPrincipal(handover.onBehalfOf, handover.onBehalfOfName),
      by: shownPrincipal(handover.by, handover.byName),
      ...(handover.reason === null ? {} : { reason: handover.reason }),
    }
  );
}

/** Whether `authority` (a delegate's grant) may make this decision on this request. */
function authorityMay(
  codec: RequestStateCodec,
  flow: Flow,
  blob: ParkedBlob,
  key: string,
  authority: Authority,
): boolean {
  if (isRequester(codec, blob, authority.principal)) return false;
  return allowed(flow, blob, key, { principal: authority.principal, roles: authority.roles }) === true;
}

/**
 * Whether `caller` may make `record` on this request: handed to the caller (for the hander's
 * authority), in its own right, or for an absent principal it is the delegate of; or why not.
 * The caller is not the requester (`chooseDecision` checked that first).
 */
export function mayMake(
  codec: RequestStateCodec,
  flow: Flow,
  blob: ParkedBlob,
  record: DecisionRecord,
  caller: DelegatedCaller,
): Right {
  // A quorum counts people: each approver votes in their own right, never for someone else, so no
  // one's right is counted twice (once by them, once by their delegate).
  if (isQuorum(flow, record.key)) {
    const own = allowed(flow, blob, record.key, caller);
    return own === true ? {} : own;
  }
  const handover = record.status === 'pending' && record.assignee ? record.handover : null;
  if (handover) {
    const mine = principalHash(codec, caller.principal);
    if (handover.to === mine) {
      const authority = handedAuthority(codec, record, handover);
      if (authority && authority.principal === caller.principal) return {};
      if (authority && authorityMay(codec, flow, blob, record.key, authority)) return { onBehalfOf: authority };
    } else if (handover.by === mine || handover.onBehalfOf === mine) {
      return `you handed it to ${shownPrincipal(handover.to, handover.toName)}`;
    }
  }
  const own = allowed(flow, blob, record.key, caller);
  if (own === true) return {};
  for (const absence of caller.absences ?? []) {
    if (authorityMay(codec, flow, blob, record.key, absence)) return { onBehalfOf: absence };
  }
  return own;
}

/** What an inbox item or a decision view says of a delegated right. */
export function delegatedFor(authority: Authority): DelegatedFor {
  return {
    kind: authority.kind,
    onBehalfOf: authority.shown,
    ...(authority.by === undefined ? {} : { by: authority.by }),
    ...(authority.reason === undefined ? {} : { reason: authority.reason }),
  };
}

/** An absence delegate as a grant the delegate may use; `undefined` when its seal does not open. */
export function absenceAuthority(codec: RequestStateCodec, record: DelegationRecord): Authority | undefined {
  const opened = openAuthority(codec, ['absence', record.id], record.authority);
  return (
    opened && {
      ...opened,
      kind: 'absence',
      shown: shownPrincipal(record.principal, record.principalName),
      reason: record.reason,
    }
  );
}

/** The caller with the absences it is the delegate of in force now (none without a ledger). */
export async function withAbsences(core: DecisionsPort, caller: DecisionCaller): Promise<DelegatedCaller> {
  const ledger = core.ledger;
  if (!ledger) return caller;
  const records = await ledger.decisions.listDelegations({
    delegate: principalHash(core.codec, caller.principal),
    activeAt: core.now(),
  });
  const absences = records.flatMap((record) => absenceAuthority(core.codec, record) ?? []);
  return absences.length === 0 ? caller : { ...caller, absences };
}

/**
 * The pending decisions a caller may make only through a delegation and that the role filter of
 * the inbox does not find: those handed to it, and those of the absent principals it stands in for.
 */
export async function delegatedCandidates(core: DecisionsPort, caller: DelegatedCaller): Promise<DecisionRecord[]> {
  const ledger = core.ledger;
  if (!ledger) return [];
  const now = core.now();
  const found = await ledger.decisions.listDecisions({
    handedTo: { assignee: principalHash(core.codec, caller.principal), now },
  });
  for (const absence of caller.absences ?? []) {
    found.push(
      ...(await ledger.decisions.listDecisions({
        pendingFor: { roles: absence.roles, excludeRequester: principalHash(core.codec, absence.principal), now },
      })),
    );
  }
  return found;
}

/** A decision view's `handover` while the decision is handed on (`{}` otherwise). */
export function handoverView(record: DecisionRecord): { handover?: NonNullable<DecisionView['handover']> } {
  const h = record.status === 'pending' && record.assignee ? record.handover : null;
  if (!h) return {};
  return {
    handover: {
      to: shownPrincipal(h.to, h.toName),
      by: shownPrincipal(h.by, h.byName),
      onBehalfOf: shownPrincipal(h.onBehalfOf, h.onBehalfOfName),
      ...(h.reason === null ? {} : { reason: h.reason }),
      at: h.at,
    },
  };
}
