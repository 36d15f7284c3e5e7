/**
 * The PostgreSQL ledger's `outbox` facet (schema 8): notifications inserted
 * on their own or inside a parked write's transaction (`insertOutbox`, which
 * `requests.ts` calls with its transaction), handed out for delivery by one
 * `UPDATE … WHERE id IN (SELECT … FOR UPDATE SKIP LOCKED) RETURNING` (each
 * row to one caller, on any instance), and settled after each attempt.
 */
import type { ClaimOutbox, LedgerOutbox, OutboxMessage, OutboxRecord, SettleOutbox } from '@baton/engine';
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { OUTBOX_RETENTION_MS } from '../core/outbox.js';
import { outbox } from '../schema/pg.js';
import type { PostgresHandle } from './handle.js';

/** Insert notifications with `into` (the ledger, or the transaction of a parked write). */
export async function insertOutbox(
  into: Pick<NodePgDatabase, 'insert'>,
  messages: readonly OutboxMessage[],
  now: number,
): Promise<void> {
  if (messages.length === 0) return;
  await into
    .insert(outbox)
    .values(
      messages.map((m) => ({
        id: m.id,
        type: m.type,
        body: m.body,
        traceContext: m.traceparent ?? null,
        attempts: 0,
        nextAttemptAt: now,
        deliveredAt: null,
        createdAt: now,
        expiresAt: now + OUTBOX_RETENTION_MS,
      })),
    )
    .onConflictDoNothing();
}

/** The `outbox` facet over `handle`. */
export function postgresOutbox(handle: PostgresHandle): LedgerOutbox {
  const { db, assertOpen } = handle;
  return {
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
        trace_context: string | null;
      }>(sql`
        update baton_outbox set next_attempt_at = ${claim.leaseUntil}
        where id in (
          select id from baton_outbox
          where delivered_at is null and next_attempt_at <= ${claim.now}
          order by next_attempt_at limit ${claim.limit}
          for update skip locked
        )
        returning id, type, body, attempts, created_at, trace_context`);
      return rows
        .map((r) => ({
          id: r.id,
          type: r.type,
          body: r.body,
          attempts: Number(r.attempts),
          createdAt: Number(r.created_at),
          ...(r.trace_context ? { traceparent: r.trace_context } : {}),
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
  };
}
