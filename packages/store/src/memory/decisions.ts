/**
 * The memory ledger's `decisions` facet: decisions owed by others (requested,
 * listed, recorded at most once by compare-and-set on their request's
 * version, closed), quorum votes, hand-overs and absence delegates. A
 * recorded decision, vote or hand-over bumps its request's version in the
 * same synchronous step. The memory ledger never held readable deciders, so
 * `rewriteLegacyDeciders` has nothing to rewrite.
 */
import type {
  DecisionFilter,
  DecisionRecord,
  DelegationFilter,
  DelegationRecord,
  HandDecision,
  HandDecisionResult,
  LedgerDecisions,
  NewDecision,
  NewDelegation,
  RecordDecision,
  RecordDecisionResult,
  RecordVote,
  RecordVoteResult,
  RemoveDelegation,
  VoteRecord,
} from '@baton/engine';
import { decisionFailure, decisionRecorded, isDecisionExpired, voteFailure } from '../core/results.js';
import { decisionKey, type MemoryState, ordinal } from './state.js';

/** The `decisions` facet over `state`. */
export function memoryDecisions(state: MemoryState): LedgerDecisions {
  const { decisions, delegations, votes, requests, assertOpen } = state;
  return {
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

    async rewriteLegacyDeciders(): Promise<number> {
      assertOpen();
      return 0;
    },
  };
}
