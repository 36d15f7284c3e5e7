/**
 * The SQLite ledger's scheduler and outbox statements (schema 8): claiming
 * parked requests whose durable timer is due, and the notification outbox
 * (insert with a round's write, claim for delivery, settle an attempt,
 * counts for metrics, pruning). SQLite has one writer at a time, so a claim
 * is one `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING` under the write
 * lock: of two instances polling the same file, one claimant at a time gets
 * each row, and a claim that outlives its lease (a crashed instance) is
 * taken over by the next poll after it.
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
import type Database from 'better-sqlite3';
import { and, asc, count, eq, inArray, isNull, lt, lte, min, or, sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import { outbox, requests } from '../schema/sqlite.js';
import type { WriteBatcher } from './writeBatcher.js';

/** The scheduler and outbox part of the SQLite ledger. */
export function createSqliteScheduling(
  db: BetterSQLite3Database,
  client: Database.Database,
  writes: WriteBatcher,
  assertOpen: () => void,
) {
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
  const insertMessage = db
    .insert(outbox)
    .values({
      id: sql.placeholder('id'),
      type: sql.placeholder('type'),
      body: sql.placeholder('body'),
      attempts: 0,
      nextAttemptAt: sql.placeholder('now'),
      deliveredAt: null,
      createdAt: sql.placeholder('now'),
      expiresAt: sql.placeholder('expiresAt'),
    })
    .onConflictDoNothing()
    .prepare();
  const readyIds = db
    .select({ id: outbox.id })
    .from(outbox)
    .where(and(isNull(outbox.deliveredAt), lte(outbox.nextAttemptAt, sql.placeholder('now'))))
    .orderBy(asc(outbox.nextAttemptAt))
    .limit(sql.placeholder('limit'));
  const claimMessages = db
    .update(outbox)
    .set({ nextAttemptAt: sql`${sql.placeholder('leaseUntil')}` })
    .where(inArray(outbox.id, readyIds))
    .returning({
      id: outbox.id,
      type: outbox.type,
      body: outbox.body,
      attempts: outbox.attempts,
      createdAt: outbox.createdAt,
    })
    .prepare();
  const delivered = db
    .update(outbox)
    .set({ deliveredAt: sql`${sql.placeholder('now')}`, attempts: sql`${outbox.attempts} + 1` })
    .where(and(eq(outbox.id, sql.placeholder('id')), isNull(outbox.deliveredAt)))
    .prepare();
  const failed = db
    .update(outbox)
    .set({ nextAttemptAt: sql`${sql.placeholder('next')}`, attempts: sql`${outbox.attempts} + 1` })
    .where(and(eq(outbox.id, sql.placeholder('id')), isNull(outbox.deliveredAt)))
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
  const pruneOutbox = db
    .delete(outbox)
    .where(
      sql`${outbox.id} in (select ${outbox.id} from ${outbox} where ${outbox.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')})`,
    )
    .prepare();
  const insertAll = client.transaction((messages: readonly OutboxMessage[], now: number) => {
    for (const m of messages) insertMessage.run({ ...m, now, expiresAt: now + OUTBOX_RETENTION_MS });
  });

  return {
    /** Insert notifications (inside the caller's transaction when there is one). */
    insertOutbox: (messages: readonly OutboxMessage[], now: number) => insertAll(messages, now),
    pruneOutbox,
    methods: {
      async claimDueRequests(claim: ClaimDue): Promise<DueRequest[]> {
        assertOpen();
        const rows = await writes.submit(() => claimDue.all({ ...claim }));
        return rows
          .map((row) => ({ id: row.id, flow: row.flow, dueAt: Number(row.dueAt), version: Number(row.version) }))
          .sort((a, b) => a.dueAt - b.dueAt);
      },
      async enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void> {
        assertOpen();
        if (messages.length === 0) return;
        await writes.submit(() => insertAll.immediate(messages, now));
      },
      async claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]> {
        assertOpen();
        const rows = await writes.submit(() => claimMessages.all({ ...claim }));
        return rows.map((r) => ({ ...r, createdAt: Number(r.createdAt) })).sort((a, b) => a.createdAt - b.createdAt);
      },
      async settleOutbox(settle: SettleOutbox): Promise<void> {
        assertOpen();
        await writes.submit(() =>
          settle.delivered
            ? delivered.run({ id: settle.id, now: settle.now })
            : failed.run({ id: settle.id, next: settle.nextAttemptAt ?? settle.now }),
        );
      },
      async schedulerStats(now: number): Promise<SchedulerStats> {
        assertOpen();
        const due = countDue.get({ now })?.n ?? 0;
        const depth = outboxDepth.get();
        return {
          due: Number(due),
          outboxDepth: Number(depth?.n ?? 0),
          outboxOldestAt: depth?.oldest === null || depth?.oldest === undefined ? null : Number(depth.oldest),
        };
      },
    },
  };
}
