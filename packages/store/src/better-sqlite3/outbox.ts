/**
 * The SQLite ledger's `outbox` facet (schema 8): notifications inserted on
 * their own or, through `sqliteOutboxWriter`, inside a parked write's
 * transaction; handed out for delivery by one `UPDATE ... WHERE id IN
 * (SELECT ... LIMIT n) RETURNING` under the write lock (one claimant at a
 * time gets each row); and settled after each delivery attempt.
 */
import type { ClaimOutbox, LedgerOutbox, OutboxMessage, OutboxRecord, SettleOutbox } from '@baton/engine';
import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import { outbox } from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** Inserts notifications (inside the caller's transaction when there is one). */
export type SqliteOutboxWriter = ReturnType<typeof sqliteOutboxWriter>;

/** The outbox insert, shared by this facet and parked writes (`requests.ts`). */
export function sqliteOutboxWriter(handle: SqliteHandle) {
  const { client, db } = handle;
  const insertMessage = db
    .insert(outbox)
    .values({
      id: sql.placeholder('id'),
      type: sql.placeholder('type'),
      body: sql.placeholder('body'),
      traceContext: sql.placeholder('traceContext'),
      attempts: 0,
      nextAttemptAt: sql.placeholder('now'),
      deliveredAt: null,
      createdAt: sql.placeholder('now'),
      expiresAt: sql.placeholder('expiresAt'),
    })
    .onConflictDoNothing()
    .prepare();
  const insertAll = client.transaction((messages: readonly OutboxMessage[], now: number) => {
    for (const m of messages)
      insertMessage.run({
        id: m.id,
        type: m.type,
        body: m.body,
        traceContext: m.traceparent ?? null,
        now,
        expiresAt: now + OUTBOX_RETENTION_MS,
      });
  });

  return insertAll;
}

/** The `outbox` facet over `handle`; `insertAll` is {@link sqliteOutboxWriter}'s. */
export function sqliteOutbox(handle: SqliteHandle, insertAll: SqliteOutboxWriter): LedgerOutbox {
  const { db, writes, assertOpen } = handle;
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
      traceContext: outbox.traceContext,
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

  return {
    async enqueueOutbox(messages: readonly OutboxMessage[], now: number): Promise<void> {
      assertOpen();
      if (messages.length === 0) return;
      await writes.submit(() => insertAll.immediate(messages, now));
    },
    async claimOutbox(claim: ClaimOutbox): Promise<OutboxRecord[]> {
      assertOpen();
      const rows = await writes.submit(() => claimMessages.all({ ...claim }));
      return rows
        .map(({ traceContext, ...r }) => ({
          ...r,
          createdAt: Number(r.createdAt),
          ...(traceContext ? { traceparent: traceContext } : {}),
        }))
        .sort((a, b) => a.createdAt - b.createdAt);
    },
    async settleOutbox(settle: SettleOutbox): Promise<void> {
      assertOpen();
      await writes.submit(() =>
        settle.delivered
          ? delivered.run({ id: settle.id, now: settle.now })
          : failed.run({ id: settle.id, next: settle.nextAttemptAt ?? settle.now }),
      );
    },
  };
}
