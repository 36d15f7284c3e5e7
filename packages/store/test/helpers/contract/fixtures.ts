/**
 * What every facet's contract suite shares: the suite's fixed "now" (`T0`),
 * fresh random ids and jtis (suites share a store, so tests never meet),
 * requests and decisions as the engine would write them, and the two moves
 * the engine makes before recording a decision (park the request, then
 * request its decisions; record at the version just read).
 *
 * ```ts
 * await requestDecisionsOn(ledger, [decisionRequest(id, 'manager_approval')]);
 * await recordDecisionOn(ledger, { id, key: 'manager_approval', decider: 'bob', content: 'c', now: T0 });
 * ```
 */
import { randomBytes } from 'node:crypto';
import type { ClaimStep, FullLedger, NewDecision, ParkRequest, RecordDecision, RedeemRequest } from '@baton/engine';

/** A fixed "now" for the suite (ms). */
export const T0 = 1_800_000_000_000;

/** A random jti like the codec's (96 bits, base64url). */
export function newJti(): string {
  return randomBytes(12).toString('base64url');
}

/** An hour and a day, in ms. */
export const HOUR = 3600_000;
export const DAY = 24 * HOUR;

/** A fresh random id (request ids, requester hashes), so tests sharing a ledger never meet. */
export function newId(prefix = 'R'): string {
  return `${prefix}-${randomBytes(9).toString('base64url')}`;
}

/** A decision row's delegation fields (schema 12) when it was never handed over nor decided for someone. */
export const NOT_DELEGATED = { assignee: null, handover: null, onBehalfOf: null, onBehalfOfName: null } as const;

/** A parked request as the engine would write it, waiting for a manager. */
export function parked(id: string, fields: Partial<ParkRequest> = {}): ParkRequest {
  return {
    id,
    flow: 'expense_approval',
    requester: 'hash-alice',
    requesterName: null,
    status: 'waiting',
    waitingFor: [{ key: 'manager_approval', role: 'manager' }],
    state: 'sealed-state-1',
    now: T0,
    expiresAt: T0 + 30 * DAY,
    ...fields,
  };
}

/** A decision as the engine would request it: a manager's, due in an hour. */
export function decisionRequest(id: string, key: string, fields: Partial<NewDecision> = {}): NewDecision {
  return {
    id,
    key,
    flow: 'expense_approval',
    role: 'manager',
    message: 'Approve 120 EUR for travel?',
    schema: '{"type":"object","properties":{"approve":{"type":"boolean"}},"required":["approve"]}',
    requester: 'hash-alice',
    requestedAt: T0,
    deadline: T0 + HOUR,
    ...fields,
  };
}

/** A redemption as the codec would ask for it: `digest-a`, a minute to live, at `T0`. */
export function redemptionRequest(jti: string, digest = 'digest-a', expiresAt = T0 + 60_000, now = T0): RedeemRequest {
  return { jti, responsesDigest: digest, expiresAt, now };
}

/** As the engine does: park each request (waiting, version 1) unless parked, then request its decisions. */
export async function requestDecisionsOn(ledger: FullLedger, list: readonly NewDecision[]): Promise<void> {
  for (const id of new Set(list.map((d) => d.id))) {
    if (!(await ledger.requests.getRequest(id))) {
      await ledger.requests.parkRequest(parked(id, { requester: 'hash-deciding' }), null);
    }
  }
  await ledger.decisions.requestDecisions(list);
}

/** As the engine does: record at the version of the request just read. */
export async function recordDecisionOn(ledger: FullLedger, decision: Omit<RecordDecision, 'expectedVersion'>) {
  return ledger.decisions.recordDecision({
    ...decision,
    expectedVersion: (await ledger.requests.getRequest(decision.id))?.version ?? 1,
  });
}

/** A claim of step `refund#0` of instance `id` by `owner`, leased for a minute from T0 (`fields` override). */
export function stepClaim(id: string, owner: string, fields: Partial<ClaimStep> = {}): ClaimStep {
  return { id, key: 'refund#0', owner, leaseUntil: T0 + 60_000, now: T0, expiresAt: T0 + DAY, ...fields };
}
