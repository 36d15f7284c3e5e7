/**
 * The in-memory ledger: Maps behind the `Ledger` interface, for tests and
 * for single-process deployments that accept losing the ledger on restart.
 * Every method runs to completion without awaiting, so within one process
 * redemptions are atomic; nothing is shared with other processes. Same
 * semantics as the SQLite and PostgreSQL ledgers, including pruning. This
 * module creates the shared state (`state.ts`) and assembles the facets, one
 * module each, into a `FullLedger`.
 */
import type { FullLedger } from '@baton/engine';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { withStats } from '../core/stats.js';
import { memoryDecisions } from './decisions.js';
import { memoryEvents } from './events.js';
import { memoryHealth } from './health.js';
import { memoryOutbox } from './outbox.js';
import { memoryPrune } from './prune.js';
import { memoryRedemptions } from './redemptions.js';
import { memoryRequests } from './requests.js';
import { memoryRuns } from './runs.js';
import { memorySchedule } from './schedule.js';
import { createMemoryState } from './state.js';
import { memorySteps } from './steps.js';

export { createMemoryAuditLog, type MemoryAuditLogOptions } from './audit.js';

/** Options for {@link createMemoryLedger}. */
export type MemoryLedgerOptions = PruningOptions;

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
export function createMemoryLedger(options: MemoryLedgerOptions = {}): FullLedger {
  const state = createMemoryState();

  const counted = withStats(
    {
      redemptions: memoryRedemptions(state),
      requests: memoryRequests(state),
      decisions: memoryDecisions(state),
      steps: memorySteps(state),
      runs: memoryRuns(state),
      schedule: memorySchedule(state),
      outbox: memoryOutbox(state),
      events: memoryEvents(state),
      prune: memoryPrune(state),
      async close(): Promise<void> {
        if (state.closed) return;
        state.closed = true;
        await pruning.stop();
        for (const map of [
          state.redemptions,
          state.tokens,
          state.requests,
          state.decisions,
          state.votes,
          state.delegations,
          state.steps,
          state.leases,
          state.outbox,
          state.waits,
          state.waitsOf,
          state.received,
        ]) {
          map.clear();
        }
      },
    },
    memoryHealth(state),
  );
  const pruning = startPruning((now) => counted.prune(now), options);
  return counted;
}
