/**
 * The PostgreSQL ledger's scheduler and outbox statements (schema 8): claiming
 * parked requests whose durable timer is due, and the notification outbox
 * (insert with a round's write, claim for delivery, settle an attempt, counts
 * for metrics, pruning). Claims are one `UPDATE … WHERE id IN (SELECT … ORDER
 * BY due_at LIMIT n FOR UPDATE SKIP LOCKED) RETURNING` on the due index, so
 * any number of instances poll at once without waiting on each other, each
 * row goes to one of them, and the cost is proportional to what is due.
 */
import type {
  ClaimDue,
  ClaimOutbox,
  DueRequest,
  OutboxMessage,
  OutboxRecord,
  SchedulerStats,
  SettleOutbox,
} from '@baton/engine';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import { outbox } from '../schema/pg.js';

/** The scheduler and outbox part of the PostgreSQL ledger. */
export function createPostgresScheduling(db: NodePgDatabase, assertOpen: () => void) {
  const pruneOutbox = db
    .delete(outbox)
    .where(
      sql`${outbox.id} in (select ${outbox.id} from ${outbox} where ${outbox.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')} for update skip locked)`,
    )
    .prepare('baton_prune_outbox');

  const insertOutbox = async (
    into: Pick<NodePgDatabase, 'insert'>,
    messages: readonly OutboxMessage[],
    now: number,
  ): Promise<void> => {
    if (messages.length === 0) return;
    await into
      .insert(outbox)
      .values(
        messages.map((m) => ({
          id: m.id,
          type: m.type,
          body: m.body,
          attempts: 0,
          nextAttemptAt: now,
          deliveredAt: null,
          createdAt: now,
          expiresAt: now + OUTBOX_RETENTION_MS,
        })),
      )
      .onConflictDoNothing();
  };

  return {
    insertOutbox,
    pruneOutbox,
    methods: {
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
      async enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void> {
        assertOpen();
        await insertOutbox(db, messages, now);
      },
      async claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]> {
        assertOpen();
        const { rows } = await db.execute<{
          id: string;
          type: string;
          body: string;
          attempts: number;
          created_at: string;
        }>(sql`
          update baton_outbox set next_attempt_at = ${claim.leaseUntil}
          where id in (
            select id from baton_outbox
            where delivered_at is null and next_attempt_at <= ${claim.now}
            order by next_attempt_at limit ${claim.limit}
            for update skip locked
          )
          returning id, type, body, attempts, created_at`);
        return rows
          .map((r) => ({
            id: r.id,
            type: r.type,
            body: r.body,
            attempts: Number(r.attempts),
            createdAt: Number(r.created_at),
          }))
          .sort((a, b) => a.createdAt - b.createdAt);
      },
      async settleOutbox(settle: SettleOutbox): Promise<void> {
        assertOpen();
        await db
          .update(outbox)
          .set(
            settle.delivered
              ? { deliveredAt: settle.now, attempts: sql`${outbox.attempts} + 1` }
              : { nextAttemptAt: settle.nextAttemptAt ?? settle.now, attempts: sql`${outbox.attempts} + 1` },
          )
          .where(and(eq(outbox.id, settle.id), isNull(outbox.deliveredAt)));
      },
      async schedulerStats(now: number): Promise<SchedulerStats> {
        assertOpen();
        const { rows } = await db.execute<{ due: number; depth: number; oldest: string | null }>(sql`
          select (select count(*) from baton_requests where due_at <= ${now} and status = 'waiting')::int as due,
                 (select count(*) from baton_outbox where delivered_at is null)::int as depth,
                 (select min(created_at) from baton_outbox where delivered_at is null) as oldest`);
        const row = rows[0]!;
        return {
          due: Number(row.due),
          outboxDepth: Number(row.depth),
          outboxOldestAt: row.oldest === null ? null : Number(row.oldest),
        };
      },
    },
  };
}
