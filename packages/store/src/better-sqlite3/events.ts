/**
 * The SQLite ledger's `events` facet (schema 9): received events kept for
 * de-duplication and the lookback window (`baton_events`: one row per
 * (event, id), inserted once with `ON CONFLICT DO NOTHING`, so of two
 * instances recording one id exactly one records it), and the reads routing
 * makes on the (event, match_key) indexes. The event waits of parked
 * requests (`baton_event_waits`) are replaced inside every parked write's
 * transaction, through `sqliteEventWaits`.
 */
import type { EventRecord, EventWait, EventWaiter, LedgerEvents, NewEvent, RecordEventResult } from '@baton/engine';
import { and, asc, eq, gt, gte, sql } from 'drizzle-orm';
import { events, eventWaits } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** Replaces a request's event waits (inside the caller's transaction). */
export type SqliteEventWaits = (id: string, flow: string, list: readonly EventWait[]) => void;

/** The event waits' writer, for parked writes (`requests.ts`). */
export function sqliteEventWaits(handle: SqliteHandle): SqliteEventWaits {
  const { db } = handle;
  const deleteWaits = db
    .delete(eventWaits)
    .where(eq(eventWaits.id, sql.placeholder('id')))
    .prepare();
  const insertWait = db
    .insert(eventWaits)
    .values({
      id: sql.placeholder('id'),
      event: sql.placeholder('event'),
      matchKey: sql.placeholder('match'),
      flow: sql.placeholder('flow'),
    })
    .onConflictDoNothing()
    .prepare();

  return function replaceWaits(id: string, flow: string, list: readonly EventWait[]): void {
    deleteWaits.run({ id });
    for (const w of list) insertWait.run({ id, event: w.event, match: w.match, flow });
  };
}

/** The `events` facet over `handle`. */
export function sqliteEvents(handle: SqliteHandle): LedgerEvents {
  const { db, writes, assertOpen } = handle;
  const insertEvent = db
    .insert(events)
    .values({
      event: sql.placeholder('event'),
      id: sql.placeholder('id'),
      matchKey: sql.placeholder('match'),
      data: sql.placeholder('data'),
      receivedAt: sql.placeholder('now'),
      lookbackUntil: sql.placeholder('lookbackUntil'),
      delivered: null,
      expiresAt: sql.placeholder('expiresAt'),
    })
    .onConflictDoNothing()
    .returning({ id: events.id })
    .prepare();
  const selectEvent = db
    .select({ delivered: events.delivered, receivedAt: events.receivedAt })
    .from(events)
    .where(and(eq(events.event, sql.placeholder('event')), eq(events.id, sql.placeholder('id'))))
    .prepare();
  const settle = db
    .update(events)
    .set({ delivered: sql`${sql.placeholder('delivered')}` })
    .where(and(eq(events.event, sql.placeholder('event')), eq(events.id, sql.placeholder('id'))))
    .prepare();
  const waitersFrom = (after: boolean) =>
    db
      .select({ id: eventWaits.id, flow: eventWaits.flow })
      .from(eventWaits)
      .where(
        and(
          eq(eventWaits.event, sql.placeholder('event')),
          eq(eventWaits.matchKey, sql.placeholder('match')),
          after ? gt(eventWaits.id, sql.placeholder('after')) : undefined,
        ),
      )
      .orderBy(asc(eventWaits.id))
      .limit(sql.placeholder('limit'))
      .prepare();
  const waitersFirst = waitersFrom(false);
  const waitersAfter = waitersFrom(true);
  const recent = db
    .select({
      event: events.event,
      id: events.id,
      match: events.matchKey,
      data: events.data,
      receivedAt: events.receivedAt,
    })
    .from(events)
    .where(
      and(
        eq(events.event, sql.placeholder('event')),
        eq(events.matchKey, sql.placeholder('match')),
        gte(events.lookbackUntil, sql.placeholder('now')),
      ),
    )
    .orderBy(asc(events.receivedAt), asc(events.id))
    .limit(sql.placeholder('limit'))
    .prepare();

  return {
    async recordEvent(event: NewEvent): Promise<RecordEventResult> {
      assertOpen();
      return writes.submit(() => {
        if (insertEvent.get({ ...event }) !== undefined) return { status: 'recorded' } as const;
        const row = selectEvent.get({ event: event.event, id: event.id });
        return {
          status: 'duplicate',
          delivered: row?.delivered ?? null,
          receivedAt: Number(row?.receivedAt ?? event.now),
        } as const;
      });
    },
    async getEvent(event: string, id: string) {
      assertOpen();
      const row = selectEvent.get({ event, id });
      return (
        row && {
          delivered: row.delivered === null ? null : Number(row.delivered),
          receivedAt: Number(row.receivedAt),
        }
      );
    },
    async settleEvent(event: string, id: string, delivered: number): Promise<void> {
      assertOpen();
      await writes.submit(() => settle.run({ event, id, delivered }));
    },
    async eventWaiters(query: { event: string; match: string; limit: number; after?: string }): Promise<EventWaiter[]> {
      assertOpen();
      const { event, match, limit, after } = query;
      return after === undefined
        ? waitersFirst.all({ event, match, limit })
        : waitersAfter.all({ event, match, limit, after });
    },
    async recentEvents(query: { event: string; match: string; now: number; limit: number }): Promise<EventRecord[]> {
      assertOpen();
      return recent.all({ ...query }).map((row) => ({ ...row, receivedAt: Number(row.receivedAt) }));
    },
  };
}
