/**
 * The PostgreSQL ledger's `events` facet (schema 9): received events kept
 * for de-duplication and the lookback window (`baton_events`: inserted once
 * per (event, id) with `ON CONFLICT DO NOTHING`, so of any number of
 * instances recording one id exactly one records it) and the reads routing
 * makes on the (event, match_key) indexes; and `replaceWaits`, which a
 * parked write (`requests.ts`) calls in its transaction to replace the
 * request's event waits (`baton_event_waits`). A rewrite that carries no
 * waits clears the old ones in its own update statement (`rewriteRequest` in
 * `requests.ts`, a data-modifying CTE), so a later writer's waits (a newer
 * version) are never removed by an older write. With batching on (the
 * default, as for redemptions) recording, reading waiters and settling go
 * through `eventBatches.ts`: one statement for every send of the process
 * waiting at that moment, waiters with their request rows.
 */
import type { EventRecord, EventWait, EventWaiter, LedgerEvents, NewEvent, RecordEventResult } from '@baton/engine';
import { and, eq, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { events, eventWaits } from '../schema/pg.js';
import type { EventBatches, WaitersQuery } from './eventBatches.js';
import type { PostgresHandle } from './handle.js';

/** Replace a request's event waits inside the caller's transaction (after its row was written). */
export async function replaceWaits(
  tx: Pick<NodePgDatabase, 'delete' | 'insert'>,
  id: string,
  flow: string,
  list: readonly EventWait[],
): Promise<void> {
  await tx.delete(eventWaits).where(eq(eventWaits.id, id));
  if (list.length === 0) return;
  await tx
    .insert(eventWaits)
    .values(list.map((w) => ({ id, event: w.event, matchKey: w.match, flow })))
    .onConflictDoNothing();
}

/** The `events` facet over `handle`, through `batches` when given (see the module comment). */
export function postgresEvents(handle: PostgresHandle, batches?: EventBatches): LedgerEvents {
  const { db, assertOpen } = handle;
  return {
    async recordEvent(event: NewEvent): Promise<RecordEventResult> {
      assertOpen();
      if (batches) return batches.record(event);
      const inserted = await db
        .insert(events)
        .values({
          event: event.event,
          id: event.id,
          matchKey: event.match,
          data: event.data,
          receivedAt: event.now,
          lookbackUntil: event.lookbackUntil,
          delivered: null,
          expiresAt: event.expiresAt,
        })
        .onConflictDoNothing()
        .returning({ id: events.id });
      if (inserted.length > 0) return { status: 'recorded' };
      const [row] = await db
        .select({ delivered: events.delivered, receivedAt: events.receivedAt })
        .from(events)
        .where(and(eq(events.event, event.event), eq(events.id, event.id)));
      return {
        status: 'duplicate',
        delivered: row?.delivered ?? null,
        receivedAt: Number(row?.receivedAt ?? event.now),
      };
    },
    async getEvent(event: string, id: string) {
      assertOpen();
      const [row] = await db
        .select({ delivered: events.delivered, receivedAt: events.receivedAt })
        .from(events)
        .where(and(eq(events.event, event), eq(events.id, id)));
      return (
        row && {
          delivered: row.delivered === null ? null : Number(row.delivered),
          receivedAt: Number(row.receivedAt),
        }
      );
    },
    async settleEvent(event: string, id: string, delivered: number): Promise<void> {
      assertOpen();
      if (batches) return batches.settle({ event, id, delivered });
      await db
        .update(events)
        .set({ delivered })
        .where(and(eq(events.event, event), eq(events.id, id)));
    },
    async eventWaiters(query: WaitersQuery): Promise<EventWaiter[]> {
      assertOpen();
      if (batches) return batches.waiters(query);
      const { rows } = await db.execute<{ id: string; flow: string }>(sql`
        select id, flow from baton_event_waits
        where event = ${query.event} and match_key = ${query.match}
          ${query.after === undefined ? sql`` : sql`and id collate "C" > ${query.after}`}
        order by id collate "C" limit ${query.limit}`);
      return rows.map((r) => ({ id: r.id, flow: r.flow }));
    },
    async recentEvents(query: { event: string; match: string; now: number; limit: number }): Promise<EventRecord[]> {
      assertOpen();
      const { rows } = await db.execute<{
        event: string;
        id: string;
        match_key: string;
        data: string;
        received_at: string;
      }>(sql`
        select event, id, match_key, data, received_at from baton_events
        where event = ${query.event} and match_key = ${query.match} and lookback_until >= ${query.now}
        order by received_at, id collate "C" limit ${query.limit}`);
      return rows.map((r) => ({
        event: r.event,
        id: r.id,
        match: r.match_key,
        data: r.data,
        receivedAt: Number(r.received_at),
      }));
    },
  };
}
