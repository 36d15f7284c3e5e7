/**
 * What the SQL drivers bind into their statements: an engine request turned
 * into the named placeholders of a driver's prepared statement (a parked
 * request, a step claim, a minted token) or into the row it inserts (a new
 * decision, pending, nobody has decided). Only the values live here; each
 * driver keeps its statements in its own file, since they are tied to its
 * dialect. Both drivers name their placeholders alike, so one mapping serves
 * both, and a field the engine adds is bound the same way on every database.
 */
import type { ClaimStep, DecisionRecord, MintTokenRequest, NewDecision, ParkRequest } from '@baton/engine';
import { encodeWaitingFor } from './requests.js';
import { hashTokenCode } from './tokens.js';

/**
 * The placeholders of a driver's park statements (insert, or compare-and-set update with
 * `expected`): the request, with `waitingFor` as the JSON text stored in `waiting_for`.
 */
export type ParkParams = Omit<ParkRequest, 'waitingFor' | 'dueAt' | 'outbox'> & {
  readonly waitingFor: string;
  readonly dueAt: number | null;
};

/** The placeholders of a driver's step-claim statements (insert, takeover). */
export type ClaimParams = Pick<ClaimStep, 'id' | 'key' | 'owner' | 'leaseUntil' | 'now' | 'expiresAt'>;

/** The placeholders of a driver's token insert: the code's hash, never the code. */
export type MintTokenParams = Pick<MintTokenRequest, 'purpose' | 'expiresAt' | 'now'> & {
  readonly hash: string;
  readonly data: string | null;
};

/** A parked request as the parameters of the park statements. */
export function parkParams(request: ParkRequest): ParkParams {
  return {
    id: request.id,
    flow: request.flow,
    requester: request.requester,
    requesterName: request.requesterName,
    status: request.status,
    waitingFor: encodeWaitingFor(request.waitingFor),
    state: request.state,
    now: request.now,
    expiresAt: request.expiresAt,
    // A request that no longer waits has no timer to fire.
    dueAt: request.status === 'waiting' ? (request.dueAt ?? null) : null,
  };
}

/** A step claim as the parameters of the claim statements. */
export function claimParams(claim: ClaimStep): ClaimParams {
  return {
    id: claim.id,
    key: claim.key,
    owner: claim.owner,
    leaseUntil: claim.leaseUntil,
    now: claim.now,
    expiresAt: claim.expiresAt,
  };
}

/** A token to mint, under its fresh `code`, as the parameters of the token insert. */
export function mintTokenParams(code: string, request: MintTokenRequest): MintTokenParams {
  return {
    hash: hashTokenCode(code),
    purpose: request.purpose,
    data: request.data ?? null,
    expiresAt: request.expiresAt,
    now: request.now,
  };
}

/** A new decision as a `baton_decisions` row: pending, nobody has decided. */
export function newDecisionRow(decision: NewDecision): Omit<DecisionRecord, 'handover'> {
  return {
    id: decision.id,
    key: decision.key,
    flow: decision.flow,
    role: decision.role,
    message: decision.message,
    schema: decision.schema,
    requester: decision.requester,
    requestedAt: decision.requestedAt,
    deadline: decision.deadline,
    status: 'pending',
    decider: null,
    deciderName: null,
    content: null,
    decidedAt: null,
  };
}
