/**
 * The in-memory ledger: Maps behind the `Ledger` interface, for tests and
 * for single-process deployments that accept losing the ledger on restart.
 * Every method runs to completion without awaiting, so within one process
 * redemptions are atomic; nothing is shared with other processes. Same
 * semantics as the SQLite and PostgreSQL ledgers, including pruning.
 */
import type {
  ClaimDue,
  ClaimOutbox,
  ClaimStep,
  ClaimStepResult,
  DecisionFilter,
  DecisionRecord,
  DelegationFilter,
  DelegationRecord,
  DueRequest,
  EventRecord,
  EventWaiter,
  HandDecision,
  HandDecisionResult,
  Ledger,
  MintTokenRequest,
  NewDecision,
  NewDelegation,
  NewEvent,
  OutboxMessage,
  OutboxRecord,
  ParkedRequest,
  ParkRequest,
  ParkResult,
  RecordDecision,
  RecordDecisionResult,
  RecordEventResult,
  RecordStep,
  RecordStepResult,
  RecordVote,
  RecordVoteResult,
  RedeemRequest,
  RedeemResult,
  RedeemTokenResult,
  RemoveDelegation,
  RunFilter,
  SchedulerStats,
  SettleOutbox,
  StepRecord,
  VoteRecord,
} from '@baton/engine';
import { LedgerError } from '../core/errors.js';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { normalizeWaitingFor } from '../core/requests.js';
import {
  conflictResult,
  decisionFailure,
  decisionRecorded,
  isDecisionExpired,
  isEnvelopeExpired,
  REDEEMED,
  REPLAYED,
  type RedemptionRow,
  type TokenRow,
  tokenFailure,
  tokenRedeemed,
  voteFailure,
} from '../core/results.js';
import { withStats } from '../core/stats.js';
import { generateTokenCode, hashTokenCode, MAX_TOKEN_CODE_LENGTH } from '../core/tokens.js';

export { createMemoryAuditLog, type MemoryAuditLogOptions } from './audit.js';

/** Options for {@link createMemoryLedger}. */
export type MemoryLedgerOptions = PruningOptions;

interface MemoryRedemption extends RedemptionRow {
  outcome: string | null;
}

interface MemoryOutbox extends OutboxRecord {
  nextAttemptAt: number;
  deliveredAt: number | null;
  readonly expiresAt: number;
  attempts: number;
}

interface MemoryToken extends TokenRow {
  usedAt: number | null;
  readonly data: string | null;
}

/**
 * Create an in-memory ledger.
 *
 * @example
 * ```ts
 * import { createRequestStateCodec, createRunner, generateKey } from '@baton/engine';
 * import { createMemoryLedger } from '@baton/store/memory';
 *
 * const ledger = createMemoryLedger(); // every requestState single-use, within this process
 * const runner = createRunner({ flows, codec: createRequestStateCodec({ keys: [generateKey()] }), ledger });
 * ```
 */
export function createMemoryLedger(options: MemoryLedgerOptions = {}): Ledger {
  const redemptions = new Map<string, MemoryRedemption>();
  const tokens = new Map<string, MemoryToken>();
  const requests = new Map<string, ParkedRequest>();
  /** Decisions by `${id}\u0000${key}`. */
  const decisions = new Map<string, DecisionRecord>();
  /** Absence delegates by id (schema 12). */
  const delegations = new Map<string, DelegationRecord>();
  const decisionKey = (id: string, key: string) => `${id}\u0000${key}`;
  /** Quorum votes by request id, oldest first. */
  const votes = new Map<string, VoteRecord[]>();
  /** Durable steps by `${id}\u0000${key}`. */
  const steps = new Map<string, StepRecord>();
  /** Schedulers' claims on parked requests' timers, by request id. */
  const leases = new Map<string, { owner: string; until: number }>();
  const outbox = new Map<string, MemoryOutbox>();
  /** Event waits: `${event}\u0000${match}` -> request id -> flow; and each request's keys, to replace them. */
  const waits = new Map<string, Map<string, string>>();
  const waitsOf = new Map<string, string[]>();
  /** Received events by `${event}\u0000${id}`. */
  const received = new Map<
    string,
    EventRecord & { delivered: number | null; lookbackUntil: number; expiresAt: number }
  >();
  const setWaits = (id: string, flow: string, list: readonly { event: string; match: string }[]) => {
    for (const at of waitsOf.get(id) ?? []) {
      const ids = waits.get(at);
      ids?.delete(id);
      if (ids?.size === 0) waits.delete(at);
    }
    waitsOf.delete(id);
    if (list.length === 0) return;
    const keys = [...new Set(list.map((w) => `${w.event}\u0000${w.match}`))];
    for (const at of keys) {
      const ids = waits.get(at) ?? new Map<string, string>();
      waits.set(at, ids);
      ids.set(id, flow);
    }
    waitsOf.set(id, keys);
  };
  let closed = false;
  const insertOutbox = (messages: readonly OutboxMessage[], now: number) => {
    for (const m of messages) {
      if (outbox.has(m.id)) continue;
      outbox.set(m.id, {
        id: m.id,
        type: m.type,
        body: m.body,
        attempts: 0,
        createdAt: now,
        nextAttemptAt: now,
        deliveredAt: null,
        expiresAt: now + OUTBOX_RETENTION_MS,
      });
    }
  };

  const ledger: Ledger = {
    async redeem(request: RedeemRequest): Promise<RedeemResult> {
      assertOpen();
      const existing = redemptions.get(request.jti);
      if (existing) return conflictResult(existing, request);
      if (isEnvelopeExpired(request.expiresAt, request.now)) return REPLAYED;
      redemptions.set(request.jti, {
        responsesDigest: request.responsesDigest,
        outcome: null,
        expiresAt: request.expiresAt,
        redeemedAt: request.now,
      });
      return REDEEMED;
    },

    async recordOutcome(jti: string, sealedOutcome: string): Promise<void> {
      assertOpen();
      const row = redemptions.get(jti);
      if (row && row.outcome === null) row.outcome = sealedOutcome;
    },

    async releaseRedemption(jti: string, responsesDigest: string): Promise<boolean> {
      assertOpen();
      const row = redemptions.get(jti);
      if (!row || row.outcome !== null || row.responsesDigest !== responsesDigest) return false;
      return redemptions.delete(jti);
    },

    async mintToken(request: MintTokenRequest): Promise<string> {
      assertOpen();
      const code = generateTokenCode();
      tokens.set(hashTokenCode(code), {
        purpose: request.purpose,
        data: request.data ?? null,
        expiresAt: request.expiresAt,
        usedAt: null,
      });
      return code;
    },

    async redeemToken(code: string, purpose: string, now: number): Promise<RedeemTokenResult> {
      assertOpen();
      if (code.length > MAX_TOKEN_CODE_LENGTH) return { status: 'unknown' };
      const row = tokens.get(hashTokenCode(code));
      if (row && row.purpose === purpose && row.usedAt === null && row.expiresAt > now) {
        row.usedAt = now;
        return tokenRedeemed(row.data);
      }
      return tokenFailure(row, purpose, now);
    },

    async parkRequest(request: ParkRequest, expectedVersion: number | null): Promise<ParkResult> {
      assertOpen();
      const existing = requests.get(request.id);
      if (expectedVersion === null ? existing !== undefined : existing?.version !== expectedVersion) {
        return { status: 'conflict' };
      }
      const version = (existing?.version ?? 0) + 1;
      const { now, outbox: messages, dueAt, events: _events, ...fields } = request;
      requests.set(request.id, {
        ...fields,
        waitingFor: normalizeWaitingFor(request.waitingFor),
        version,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
        dueAt: request.status === 'waiting' ? (dueAt ?? null) : null,
      });
      leases.delete(request.id);
      setWaits(request.id, request.flow, request.status === 'waiting' ? (request.events ?? []) : []);
      if (messages) insertOutbox(messages, now);
      return { status: 'parked', version };
    },

    async getRequest(id: string): Promise<ParkedRequest | undefined> {
      assertOpen();
      return requests.get(id);
    },

    async listRequests(requester: string, since: number): Promise<ParkedRequest[]> {
      assertOpen();
      return [...requests.values()]
        .filter((row) => row.requester === requester && row.updatedAt >= since)
        .sort((a, b) => b.updatedAt - a.updatedAt || ordinal(a.id, b.id));
    },

    async requestDecisions(list: readonly NewDecision[]): Promise<void> {
      assertOpen();
      for (const decision of list) {
        const key = decisionKey(decision.id, decision.key);
        if (decisions.has(key)) continue;
        decisions.set(key, {
          ...decision,
          status: 'pending',
          decider: null,
          deciderName: null,
          content: null,
          decidedAt: null,
          assignee: null,
          handover: null,
          onBehalfOf: null,
          onBehalfOfName: null,
        });
      }
    },

    async listDecisions(filter: DecisionFilter): Promise<DecisionRecord[]> {
      assertOpen();
      const pendingFor = filter.pendingFor;
      return [...decisions.values()]
        .filter(
          (row) =>
            (filter.id === undefined || row.id === filter.id) &&
            (filter.handedTo === undefined ||
              (row.status === 'pending' &&
                row.assignee === filter.handedTo.assignee &&
                !isDecisionExpired(row.deadline, filter.handedTo.now))) &&
            (pendingFor === undefined ||
              (row.status === 'pending' &&
                !isDecisionExpired(row.deadline, pendingFor.now) &&
                (row.role === null || pendingFor.roles.includes(row.role)) &&
                row.requester !== pendingFor.excludeRequester)),
        )
        .sort((a, b) => a.requestedAt - b.requestedAt || ordinal(a.key, b.key));
    },

    async recordDecision(decision: RecordDecision): Promise<RecordDecisionResult> {
      assertOpen();
      const row = decisions.get(decisionKey(decision.id, decision.key));
      const request = requests.get(decision.id);
      const failure = decisionFailure(row, request, decision.expectedVersion, decision.now);
      if (failure) return failure;
      // One synchronous step: the decision and its request's version move together.
      const version = request!.version + 1;
      requests.set(decision.id, { ...request!, version, updatedAt: decision.now });
      decisions.set(decisionKey(decision.id, decision.key), {
        ...row!,
        status: 'decided',
        decider: decision.decider,
        deciderName: decision.deciderName ?? null,
        content: decision.content,
        decidedAt: decision.now,
        ...(decision.deciderDisplay == null ? {} : { deciderDisplay: decision.deciderDisplay }),
        ...(decision.via == null ? {} : { via: decision.via }),
        assignee: null,
        onBehalfOf: decision.onBehalfOf ?? null,
        onBehalfOfName: decision.onBehalfOfName ?? null,
      });
      return decisionRecorded(version);
    },

    async recordVote(vote: RecordVote): Promise<RecordVoteResult> {
      assertOpen();
      const at = decisionKey(vote.id, vote.key);
      const row = decisions.get(at);
      const request = requests.get(vote.id);
      const cast = votes.get(vote.id) ?? [];
      const voted = cast.some((v) => v.key === vote.key && v.voter === vote.voter);
      const failure = voteFailure(row, request, vote.expectedVersion, vote.now, voted);
      if (failure) return failure;
      // One synchronous step: the vote, the decision it completes and the version move together.
      const version = request!.version + 1;
      requests.set(vote.id, { ...request!, version, updatedAt: vote.now });
      votes.set(vote.id, [
        ...cast,
        {
          id: vote.id,
          key: vote.key,
          voter: vote.voter,
          voterName: vote.voterName ?? null,
          displayName: vote.displayName ?? null,
          content: vote.content,
          decidedAt: vote.now,
          via: vote.via,
          version,
        },
      ]);
      const decide = vote.decide;
      if (decide) {
        decisions.set(at, {
          ...row!,
          status: 'decided',
          decider: decide.decider,
          deciderName: decide.deciderName ?? null,
          content: decide.content,
          decidedAt: vote.now,
          ...(decide.deciderDisplay == null ? {} : { deciderDisplay: decide.deciderDisplay }),
          ...(decide.via == null ? {} : { via: decide.via }),
          assignee: null,
        });
      }
      return decisionRecorded(version);
    },

    async listVotes(id: string): Promise<VoteRecord[]> {
      assertOpen();
      return [...(votes.get(id) ?? [])].sort((a, b) => a.version - b.version);
    },

    async handDecision(handOver: HandDecision): Promise<HandDecisionResult> {
      assertOpen();
      const row = decisions.get(decisionKey(handOver.id, handOver.key));
      const request = requests.get(handOver.id);
      const failure = decisionFailure(row, request, handOver.expectedVersion, handOver.now);
      if (failure) return failure;
      const version = request!.version + 1;
      requests.set(handOver.id, { ...request!, version, updatedAt: handOver.now });
      decisions.set(decisionKey(handOver.id, handOver.key), {
        ...row!,
        assignee: handOver.handover.to,
        handover: { ...handOver.handover },
      });
      return { status: 'handed', version };
    },

    async setDelegation(delegation: NewDelegation): Promise<void> {
      assertOpen();
      if (delegations.has(delegation.id)) return;
      delegations.set(delegation.id, {
        ...delegation,
        roles: [...delegation.roles],
        removedAt: null,
        removedReason: null,
        removedBy: null,
        removedByName: null,
      });
    },

    async listDelegations(filter: DelegationFilter): Promise<DelegationRecord[]> {
      assertOpen();
      const at = filter.activeAt;
      return [...delegations.values()]
        .filter(
          (d) =>
            (filter.delegate === undefined || d.delegate === filter.delegate) &&
            (at === undefined || (d.removedAt === null && d.startsAt <= at && at < d.endsAt)),
        )
        .sort((a, b) => b.createdAt - a.createdAt || ordinal(a.id, b.id));
    },

    async removeDelegation(removal: RemoveDelegation): Promise<boolean> {
      assertOpen();
      const row = delegations.get(removal.id);
      if (!row || row.removedAt !== null) return false;
      delegations.set(removal.id, {
        ...row,
        removedAt: removal.now,
        removedReason: removal.reason,
        removedBy: removal.by,
        removedByName: removal.byName,
      });
      return true;
    },

    async closeDecisions(id: string, _now: number): Promise<number> {
      assertOpen();
      let closedCount = 0;
      for (const [key, row] of decisions) {
        if (row.id === id && row.status === 'pending') {
          decisions.set(key, { ...row, status: 'closed' });
          closedCount++;
        }
      }
      return closedCount;
    },

    async claimStep(claim: ClaimStep): Promise<ClaimStepResult> {
      assertOpen();
      const at = decisionKey(claim.id, claim.key);
      const row = steps.get(at);
      if (row === undefined) {
        steps.set(at, {
          id: claim.id,
          key: claim.key,
          status: 'running',
          owner: claim.owner,
          leaseUntil: claim.leaseUntil,
          claims: 1,
          outcome: null,
          recordedAt: null,
          expiresAt: claim.expiresAt,
        });
        return { status: 'claimed', claims: 1 };
      }
      if (row.status !== 'running') return { status: 'recorded', record: row };
      if (row.owner !== claim.owner && row.leaseUntil > claim.now) {
        return { status: 'held', owner: row.owner, leaseUntil: row.leaseUntil };
      }
      const claims = row.owner === claim.owner ? row.claims : row.claims + 1;
      steps.set(at, { ...row, owner: claim.owner, leaseUntil: claim.leaseUntil, claims });
      return { status: 'claimed', claims };
    },

    async recordStep(record: RecordStep): Promise<RecordStepResult> {
      assertOpen();
      const at = decisionKey(record.id, record.key);
      const row = steps.get(at);
      if (row === undefined) return { status: 'unknown' };
      if (row.status !== 'running') return { status: 'already_recorded', record: row };
      steps.set(at, { ...row, status: record.status, outcome: record.outcome, recordedAt: record.now });
      return { status: 'recorded' };
    },

    async getStep(id: string, key: string): Promise<StepRecord | undefined> {
      assertOpen();
      return steps.get(decisionKey(id, key));
    },

    async reopenStep(id: string, key: string, _now: number): Promise<boolean> {
      assertOpen();
      const at = decisionKey(id, key);
      const row = steps.get(at);
      if (row?.status !== 'failed') return false;
      steps.set(at, { ...row, status: 'running', owner: '', leaseUntil: 0, outcome: null, recordedAt: null });
      return true;
    },

    async listRuns(filter: RunFilter): Promise<ParkedRequest[]> {
      assertOpen();
      const { after } = filter;
      return [...requests.values()]
        .filter(
          (row) =>
            (filter.flow === undefined || row.flow === filter.flow) &&
            (filter.status === undefined || row.status === filter.status) &&
            (filter.requester === undefined ||
              row.requester === filter.requester ||
              row.requesterName === filter.requester) &&
            (filter.updatedSince === undefined || row.updatedAt >= filter.updatedSince) &&
            (filter.createdSince === undefined || row.createdAt >= filter.createdSince) &&
            (after === undefined ||
              row.updatedAt < after.updatedAt ||
              (row.updatedAt === after.updatedAt && ordinal(row.id, after.id) > 0)),
        )
        .sort((a, b) => b.updatedAt - a.updatedAt || ordinal(a.id, b.id))
        .slice(0, filter.limit);
    },

    async listSteps(id: string): Promise<StepRecord[]> {
      assertOpen();
      return [...steps.values()].filter((step) => step.id === id).sort((a, b) => ordinal(a.key, b.key));
    },

    async claimDueRequests(claim: ClaimDue): Promise<DueRequest[]> {
      assertOpen();
      const due = [...requests.values()]
        .filter((r) => r.status === 'waiting' && r.dueAt != null && r.dueAt <= claim.now)
        .filter((r) => (leases.get(r.id)?.until ?? -Infinity) < claim.now)
        .sort((a, b) => a.dueAt! - b.dueAt! || ordinal(a.id, b.id))
        .slice(0, claim.limit);
      for (const r of due) leases.set(r.id, { owner: claim.owner, until: claim.leaseUntil });
      return due.map((r) => ({ id: r.id, flow: r.flow, dueAt: r.dueAt!, version: r.version }));
    },

    async enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void> {
      assertOpen();
      insertOutbox(messages, now);
    },

    async claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]> {
      assertOpen();
      const ready = [...outbox.values()]
        .filter((m) => m.deliveredAt === null && m.nextAttemptAt <= claim.now)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
        .slice(0, claim.limit);
      for (const m of ready) m.nextAttemptAt = claim.leaseUntil;
      return ready
        .map(({ id, type, body, attempts, createdAt }) => ({ id, type, body, attempts, createdAt }))
        .sort((a, b) => a.createdAt - b.createdAt);
    },

    async settleOutbox(settle: SettleOutbox): Promise<void> {
      assertOpen();
      const row = outbox.get(settle.id);
      if (!row || row.deliveredAt !== null) return;
      row.attempts++;
      if (settle.delivered) row.deliveredAt = settle.now;
      else row.nextAttemptAt = settle.nextAttemptAt ?? settle.now;
    },

    async schedulerStats(now: number): Promise<SchedulerStats> {
      assertOpen();
      let due = 0;
      for (const r of requests.values()) if (r.status === 'waiting' && r.dueAt != null && r.dueAt <= now) due++;
      let outboxDepth = 0;
      let outboxOldestAt: number | null = null;
      for (const m of outbox.values()) {
        if (m.deliveredAt !== null) continue;
        outboxDepth++;
        outboxOldestAt = outboxOldestAt === null ? m.createdAt : Math.min(outboxOldestAt, m.createdAt);
      }
      return { due, outboxDepth, outboxOldestAt };
    },

    async recordEvent(event: NewEvent): Promise<RecordEventResult> {
      assertOpen();
      const at = `${event.event}\u0000${event.id}`;
      const existing = received.get(at);
      if (existing) return { status: 'duplicate', delivered: existing.delivered, receivedAt: existing.receivedAt };
      received.set(at, {
        event: event.event,
        id: event.id,
        match: event.match,
        data: event.data,
        receivedAt: event.now,
        lookbackUntil: event.lookbackUntil,
        expiresAt: event.expiresAt,
        delivered: null,
      });
      return { status: 'recorded' };
    },

    async getEvent(event: string, id: string) {
      assertOpen();
      const row = received.get(`${event}\u0000${id}`);
      return row && { delivered: row.delivered, receivedAt: row.receivedAt };
    },

    async settleEvent(event: string, id: string, delivered: number): Promise<void> {
      assertOpen();
      const row = received.get(`${event}\u0000${id}`);
      if (row) row.delivered = delivered;
    },

    async eventWaiters(query): Promise<EventWaiter[]> {
      assertOpen();
      const ids = waits.get(`${query.event}\u0000${query.match}`);
      if (!ids) return [];
      return [...ids]
        .filter(([id]) => query.after === undefined || id > query.after)
        .sort(([a], [b]) => ordinal(a, b))
        .slice(0, query.limit)
        .map(([id, flow]) => ({ id, flow }));
    },

    async recentEvents(query): Promise<EventRecord[]> {
      assertOpen();
      return [...received.values()]
        .filter((e) => e.event === query.event && e.match === query.match && e.lookbackUntil >= query.now)
        .sort((a, b) => a.receivedAt - b.receivedAt || ordinal(a.id, b.id))
        .slice(0, query.limit)
        .map(({ event, id, match, data, receivedAt }) => ({ event, id, match, data, receivedAt }));
    },

    async prune(now: number): Promise<number> {
      assertOpen();
      let removed = 0;
      for (const [at, row] of received) {
        if (row.expiresAt < now && received.delete(at)) removed++;
      }
      for (const [id, row] of outbox) {
        if (row.expiresAt < now && outbox.delete(id)) removed++;
      }
      for (const [at, row] of steps) {
        if (row.expiresAt < now && steps.delete(at)) removed++;
      }
      for (const [jti, row] of redemptions) {
        if (row.expiresAt < now && redemptions.delete(jti)) removed++;
      }
      for (const [hash, row] of tokens) {
        if (row.expiresAt < now && tokens.delete(hash)) removed++;
      }
      for (const [id, row] of requests) {
        if (row.expiresAt < now && requests.delete(id)) {
          removed++;
          setWaits(id, row.flow, []);
          for (const [key, decision] of decisions) {
            if (decision.id === id && decisions.delete(key)) removed++;
          }
          votes.delete(id);
        }
      }
      return removed;
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await schedule.stop();
      redemptions.clear();
      tokens.clear();
      requests.clear();
      decisions.clear();
      votes.clear();
      delegations.clear();
      steps.clear();
      leases.clear();
      outbox.clear();
      waits.clear();
      waitsOf.clear();
      received.clear();
    },
  };

  const counted = withStats(ledger, { driver: 'memory', ping: async () => assertOpen() });
  const schedule = startPruning((now) => counted.prune(now), options);
  return counted;

  function assertOpen(): void {
    if (closed) throw new LedgerError('The memory ledger is closed');
  }
}

/**
 * Plain string order (UTF-16 code units), which is how SQLite's BINARY collation and
 * PostgreSQL's `COLLATE "C"` sort text (byte order) for every character short of the astral
 * planes; `localeCompare` would not match them. Ties in the listings break the same way in
 * every ledger.
 */
function ordinal(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
