/**
 * The memory ledger's `requests` facet: parked flow instances, written by
 * compare-and-set on their version. A parked write also replaces the
 * request's event waits, ends a scheduler's lease on it and inserts the
 * notifications its round raised, in the same synchronous step.
 */
import type { LedgerRequests, ParkedRequest, ParkRequest, ParkResult } from '@baton/engine';
import { normalizeWaitingFor } from '../core/requests.js';
import { type MemoryState, ordinal } from './state.js';

/** The `requests` facet over `state`. */
export function memoryRequests(state: MemoryState): LedgerRequests {
  const { requests, leases, assertOpen } = state;
  return {
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
      state.setWaits(request.id, request.flow, request.status === 'waiting' ? (request.events ?? []) : []);
      if (messages) state.insertOutbox(messages, now);
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
  };
}
