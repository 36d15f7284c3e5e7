/**
 * The memory ledger's `runs` facet: what operators read (`baton runs`, the
 * inspector): every requester's parked requests, filtered and keyset-paged
 * newest first, and one flow instance's durable steps by key.
 */
import type { LedgerRuns, ParkedRequest, RunFilter, StepRecord } from '@baton/engine';
import { type MemoryState, ordinal } from './state.js';

/** The `runs` facet over `state`. */
export function memoryRuns(state: MemoryState): LedgerRuns {
  const { requests, steps, assertOpen } = state;
  return {
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
  };
}
