/**
 * The PostgreSQL ledger's `schedule` facet (schema 8): claiming parked
 * requests whose durable timer is due, and the counts `/metrics` shows (due
 * requests, outbox depth, decisions waiting). Claims are one `UPDATE … WHERE id IN (SELECT …
 * ORDER BY due_at LIMIT n FOR UPDATE SKIP LOCKED) RETURNING` on the due
 * index, so any number of instances poll at once without waiting on each
 * other, each row goes to one of them, and the cost is proportional to what
 * is due.
 */
import type { ClaimDue, DueRequest, LedgerSchedule, SchedulerStats } from '@baton/engine';
import { sql } from 'drizzle-orm';
import type { PostgresHandle } from './handle.js';

/** The `schedule` facet over `handle`. */
export function postgresSchedule(handle: PostgresHandle): LedgerSchedule {
  const { db, assertOpen } = handle;
  return {
    async claimDueRequests(claim: ClaimDue): Promise<DueRequest[]> {
      assertOpen();
      const { rows } = await db.execute<{ id: string; flow: string; due_at: string; version: number }>(sql`
        update baton_requests set lease_owner = ${claim.owner}, lease_until = ${claim.leaseUntil}
        where id in (
          select id from baton_requests
          where due_at <= ${claim.now} and status = 'waiting'
            and (lease_until is null or lease_until < ${claim.now})
          order by due_at limit ${claim.limit}
          for update skip locked
        )
        returning id, flow, due_at, version`);
      return rows
        .map((r) => ({ id: r.id, flow: r.flow, dueAt: Number(r.due_at), version: Number(r.version) }))
        .sort((a, b) => a.dueAt - b.dueAt);
    },
    async schedulerStats(now: number): Promise<SchedulerStats> {
      assertOpen();
      const { rows } = await db.execute<{ due: number; depth: number; oldest: string | null; pending: number }>(sql`
        select (select count(*) from baton_requests where due_at <= ${now} and status = 'waiting')::int as due,
               (select count(*) from baton_outbox where delivered_at is null)::int as depth,
               (select min(created_at) from baton_outbox where delivered_at is null) as oldest,
               (select count(*) from baton_decisions where status = 'pending')::int as pending`);
      const row = rows[0]!;
      return {
        due: Number(row.due),
        outboxDepth: Number(row.depth),
        outboxOldestAt: row.oldest === null ? null : Number(row.oldest),
        decisionsWaiting: Number(row.pending),
      };
    },
  };
}
