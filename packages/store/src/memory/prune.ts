/**
 * The memory ledger's `prune`: deletes every row that expired before `now`
 * (received events, outbox rows, steps, redemptions, tokens, and parked
 * requests together with their decisions, votes and event waits) and
 * returns how many it removed.
 */
import type { MemoryState } from './state.js';

/** `prune` over `state`. */
export function memoryPrune(state: MemoryState): (now: number) => Promise<number> {
  const { received, outbox, steps, redemptions, tokens, requests, decisions, votes } = state;
  return async (now) => {
    state.assertOpen();
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
        state.setWaits(id, row.flow, []);
        for (const [key, decision] of decisions) {
          if (decision.id === id && decisions.delete(key)) removed++;
        }
        votes.delete(id);
      }
    }
    return removed;
  };
}
