/**
 * The PostgreSQL ledger's `prune`: deletes the rows that expired before
 * `now`, table by table in statements of at most `PRUNE_BATCH` rows, then
 * expired requests with their decisions, votes and event waits, one
 * statement per batch. Every batch locks its rows `FOR UPDATE SKIP LOCKED`,
 * so instances pruning at the same moment take disjoint batches instead of
 * queueing. Stops early once the connection is closed.
 */
import { inArray, lt, sql } from 'drizzle-orm';
import { events, outbox, redemptions, tokens } from '../schema/pg.js';
import type { PostgresHandle } from './handle.js';

/** Rows deleted per statement by `prune`. */
const PRUNE_BATCH = 5000;

/** Expired requests pruned per statement (each takes its decisions with it). */
const PRUNE_REQUESTS_BATCH = 1000;

/** `prune` over `handle`. */
export function postgresPrune(handle: PostgresHandle): (now: number) => Promise<number> {
  const { connection, db, assertOpen } = handle;
  // SKIP LOCKED: instances pruning at the same moment take disjoint batches instead of queueing.
  const pruneRedemptions = db
    .delete(redemptions)
    .where(
      inArray(
        redemptions.jti,
        db
          .select({ jti: redemptions.jti })
          .from(redemptions)
          .where(lt(redemptions.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit'))
          .for('update', { skipLocked: true }),
      ),
    )
    .prepare('baton_prune_redemptions');
  const pruneTokens = db
    .delete(tokens)
    .where(
      inArray(
        tokens.codeHash,
        db
          .select({ codeHash: tokens.codeHash })
          .from(tokens)
          .where(lt(tokens.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit'))
          .for('update', { skipLocked: true }),
      ),
    )
    .prepare('baton_prune_tokens');
  const pruneOutbox = db
    .delete(outbox)
    .where(
      sql`${outbox.id} in (select ${outbox.id} from ${outbox} where ${outbox.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')} for update skip locked)`,
    )
    .prepare('baton_prune_outbox');
  const pruneEvents = db
    .delete(events)
    .where(
      sql`(${events.event}, ${events.id}) in (select ${events.event}, ${events.id} from ${events} where ${events.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')} for update skip locked)`,
    )
    .prepare('baton_prune_events');

  return async (now) => {
    assertOpen();
    let removed = 0;
    for (;;) {
      if (connection.closed) return removed;
      const result = await db.execute(sql`
        delete from baton_steps where ctid in (
          select ctid from baton_steps where expires_at < ${now} limit ${PRUNE_BATCH} for update skip locked
        )`);
      const count = result.rowCount ?? 0;
      removed += count;
      if (count < PRUNE_BATCH) break;
    }
    for (const statement of [pruneRedemptions, pruneTokens, pruneOutbox, pruneEvents]) {
      for (;;) {
        if (connection.closed) return removed;
        const result = await statement.execute({ now, limit: PRUNE_BATCH });
        const count = result.rowCount ?? 0;
        removed += count;
        if (count < PRUNE_BATCH) break;
      }
    }
    for (;;) {
      if (connection.closed) return removed;
      // One statement per batch: the expired requests (locked, skipping those another
      // instance is pruning) and their decisions go together or not at all.
      const result = await db.execute<{ requests: number; decisions: number }>(sql`
        with doomed as (
          select id from baton_requests where expires_at < ${now}
          limit ${PRUNE_REQUESTS_BATCH} for update skip locked
        ), gone_decisions as (
          delete from baton_decisions where id in (select id from doomed) returning 1
        ), gone_waits as (
          delete from baton_event_waits where id in (select id from doomed) returning 1
        ), gone_votes as (
          delete from baton_decision_votes where id in (select id from doomed) returning 1
        ), gone_requests as (
          delete from baton_requests where id in (select id from doomed) returning 1
        )
        select (select count(*) from gone_requests)::int as requests,
               (select count(*) from gone_decisions)::int as decisions`);
      const gone = result.rows[0]!;
      removed += gone.requests + gone.decisions;
      if (gone.requests < PRUNE_REQUESTS_BATCH) break;
    }
    return removed;
  };
}
