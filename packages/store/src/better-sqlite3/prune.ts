/**
 * The SQLite ledger's `prune`: deletes the rows that expired before `now`,
 * table by table in statements of at most `PRUNE_BATCH` rows (yielding to the
 * event loop between them, so other writers are never blocked for long),
 * then expired requests with their decisions, votes and event waits, one
 * transaction per batch. Stops early once the ledger is closed.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { inArray, lt, sql } from 'drizzle-orm';
import {
  decisions,
  decisionVotes,
  events,
  eventWaits,
  outbox,
  redemptions,
  requests,
  steps,
  tokens,
} from '../schema/sqlite.js';
import type { SqliteHandle } from './handle.js';

/** Rows deleted per statement by `prune`, so other writers are never blocked for long. */
const PRUNE_BATCH = 2000;

/** Expired requests pruned per transaction (each takes its decisions with it). */
const PRUNE_REQUESTS_BATCH = 500;

/** `prune` over `handle`. */
export function sqlitePrune(handle: SqliteHandle): (now: number) => Promise<number> {
  const { client, db, assertOpen } = handle;
  const pruneRedemptions = db
    .delete(redemptions)
    .where(
      inArray(
        redemptions.jti,
        db
          .select({ jti: redemptions.jti })
          .from(redemptions)
          .where(lt(redemptions.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit')),
      ),
    )
    .prepare();
  const pruneTokens = db
    .delete(tokens)
    .where(
      inArray(
        tokens.codeHash,
        db
          .select({ codeHash: tokens.codeHash })
          .from(tokens)
          .where(lt(tokens.expiresAt, sql.placeholder('now')))
          .limit(sql.placeholder('limit')),
      ),
    )
    .prepare();
  const selectExpiredRequests = db
    .select({ id: requests.id })
    .from(requests)
    .where(lt(requests.expiresAt, sql.placeholder('now')))
    .limit(sql.placeholder('limit'))
    .prepare();
  /** One batch of expired requests and their decisions, deleted together (or not at all). */
  const pruneRequestsBatch = client.transaction((now: number): { requests: number; decisions: number } => {
    const ids = selectExpiredRequests.all({ now, limit: PRUNE_REQUESTS_BATCH }).map((row) => row.id);
    if (ids.length === 0) return { requests: 0, decisions: 0 };
    const gone = db.delete(decisions).where(inArray(decisions.id, ids)).run().changes;
    db.delete(decisionVotes).where(inArray(decisionVotes.id, ids)).run();
    db.delete(eventWaits).where(inArray(eventWaits.id, ids)).run();
    return { requests: db.delete(requests).where(inArray(requests.id, ids)).run().changes, decisions: gone };
  });
  const pruneSteps = db
    .delete(steps)
    .where(
      sql`(${steps.id}, ${steps.key}) in (select ${steps.id}, ${steps.key} from ${steps} where ${steps.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')})`,
    )
    .prepare();
  const pruneOutbox = db
    .delete(outbox)
    .where(
      sql`${outbox.id} in (select ${outbox.id} from ${outbox} where ${outbox.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')})`,
    )
    .prepare();
  const pruneEvents = db
    .delete(events)
    .where(
      sql`(${events.event}, ${events.id}) in (select ${events.event}, ${events.id} from ${events} where ${events.expiresAt} < ${sql.placeholder('now')} limit ${sql.placeholder('limit')})`,
    )
    .prepare();

  return async (now) => {
    assertOpen();
    let removed = 0;
    for (const statement of [pruneRedemptions, pruneTokens, pruneSteps, pruneOutbox, pruneEvents]) {
      for (;;) {
        if (handle.closed) return removed;
        const { changes } = statement.run({ now, limit: PRUNE_BATCH });
        removed += changes;
        if (changes < PRUNE_BATCH) break;
        await yieldToEventLoop();
      }
    }
    for (;;) {
      if (handle.closed) return removed;
      const gone = pruneRequestsBatch.immediate(now);
      removed += gone.requests + gone.decisions;
      if (gone.requests < PRUNE_REQUESTS_BATCH) break;
      await yieldToEventLoop();
    }
    return removed;
  };
}
