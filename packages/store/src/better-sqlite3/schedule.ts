/**
 * The SQLite ledger's `schedule` facet (schema 8): claiming parked requests
 * whose durable timer is due, and the counts `/metrics` shows (due requests,
 * outbox depth, decisions waiting). SQLite has one writer at a time, so a claim is one `UPDATE
 * ... WHERE id IN (SELECT ... LIMIT n) RETURNING` under the write lock: of
 * two instances polling the same file, one claimant at a time gets each row,
 * and a claim that outlives its lease (a crashed instance) is taken over by
 * the next poll after it.
 */
import type { ClaimDue, DueRequest, LedgerSchedule, SchedulerStats } from '@baton/engine';
import { and, asc, count, eq, inArray, isNull, lt, lte, min, or, sql } from 'drizzle-orm';
import { decisions, outbox, requests } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** The `schedule` facet over `handle`. */
export function sqliteSchedule(handle: SqliteHandle): LedgerSchedule {
  const { db, writes, assertOpen } = handle;
  const dueIds = db
    .select({ id: requests.id })
    .from(requests)
    .where(
      and(
        lte(requests.dueAt, sql.placeholder('now')),
        eq(requests.status, 'waiting'),
        or(isNull(requests.leaseUntil), lt(requests.leaseUntil, sql.placeholder('now'))),
      ),
    )
    .orderBy(asc(requests.dueAt))
    .limit(sql.placeholder('limit'));
  const claimDue = db
    .update(requests)
    .set({ leaseOwner: sql`${sql.placeholder('owner')}`, leaseUntil: sql`${sql.placeholder('leaseUntil')}` })
    .where(inArray(requests.id, dueIds))
    .returning({ id: requests.id, flow: requests.flow, dueAt: requests.dueAt, version: requests.version })
    .prepare();
  const countDue = db
    .select({ n: count() })
    .from(requests)
    .where(and(lte(requests.dueAt, sql.placeholder('now')), eq(requests.status, 'waiting')))
    .prepare();
  const outboxDepth = db
    .select({ n: count(), oldest: min(outbox.createdAt) })
    .from(outbox)
    .where(isNull(outbox.deliveredAt))
    .prepare();
  const pendingDecisions = db.select({ n: count() }).from(decisions).where(eq(decisions.status, 'pending')).prepare();

  return {
    async claimDueRequests(claim: ClaimDue): Promise<DueRequest[]> {
      assertOpen();
      const rows = await writes.submit(() => claimDue.all({ ...claim }));
      return rows
        .map((row) => ({ id: row.id, flow: row.flow, dueAt: Number(row.dueAt), version: Number(row.version) }))
        .sort((a, b) => a.dueAt - b.dueAt);
    },
    async schedulerStats(now: number): Promise<SchedulerStats> {
      assertOpen();
      const due = countDue.get({ now })?.n ?? 0;
      const depth = outboxDepth.get();
      return {
        due: Number(due),
        outboxDepth: Number(depth?.n ?? 0),
        outboxOldestAt: depth?.oldest === null || depth?.oldest === undefined ? null : Number(depth.oldest),
        decisionsWaiting: Number(pendingDecisions.get()?.n ?? 0),
      };
    },
  };
}
