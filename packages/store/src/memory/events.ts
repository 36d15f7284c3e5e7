/**
 * The memory ledger's `events` facet: received events recorded once per
 * (event, id) for de-duplication and the lookback window, their delivery
 * counts, and the reads routing makes: the requests waiting on (event,
 * match) (kept by `MemoryState.setWaits`) and the events still in their
 * lookback window.
 */
import type { EventRecord, EventWaiter, LedgerEvents, NewEvent, RecordEventResult } from '@baton/engine';
import { type MemoryState, ordinal } from './state.js';

/** The `events` facet over `state`. */
export function memoryEvents(state: MemoryState): LedgerEvents {
  const { received, waits, assertOpen } = state;
  return {
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
  };
}
