/**
 * The memory ledger's `outbox` facet: notifications inserted on their own
 * (a parked write inserts its own through `MemoryState.insertOutbox`),
 * handed out under a lease oldest first, and settled after each delivery
 * attempt.
 */
import type { ClaimOutbox, LedgerOutbox, OutboxMessage, OutboxRecord, SettleOutbox } from '@baton/engine';
import type { MemoryState } from './state.js';

/** The `outbox` facet over `state`. */
export function memoryOutbox(state: MemoryState): LedgerOutbox {
  const { outbox, assertOpen } = state;
  return {
    async enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void> {
      assertOpen();
      state.insertOutbox(messages, now);
    },

    async claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]> {
      assertOpen();
      const ready = [...outbox.values()]
        .filter((m) => m.deliveredAt === null && m.nextAttemptAt <= claim.now)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || a.createdAt - b.createdAt)
        .slice(0, claim.limit);
      for (const m of ready) m.nextAttemptAt = claim.leaseUntil;
      return ready
        .map(({ id, type, body, attempts, createdAt, traceparent }) => ({
          id,
          type,
          body,
          attempts,
          createdAt,
          ...(traceparent ? { traceparent } : {}),
        }))
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
  };
}
