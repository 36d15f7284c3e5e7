/**
 * The memory ledger's `schedule` facet: waiting requests whose timer is due,
 * claimed under a lease (earliest first; a lease that ended may be claimed
 * again), and the counts `/metrics` shows (due requests, outbox depth,
 * decisions waiting).
 */
import type { ClaimDue, DueRequest, LedgerSchedule, SchedulerStats } from '@baton/engine';
import { type MemoryState, ordinal } from './state.js';

/** The `schedule` facet over `state`. */
export function memorySchedule(state: MemoryState): LedgerSchedule {
  const { requests, leases, outbox, decisions, assertOpen } = state;
  return {
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
      let decisionsWaiting = 0;
      for (const d of decisions.values()) if (d.status === 'pending') decisionsWaiting++;
      return { due, outboxDepth, outboxOldestAt, decisionsWaiting };
    },
  };
}
