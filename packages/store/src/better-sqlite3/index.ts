/**
 * The SQLite ledger on better-sqlite3: the embedded default, one file that
 * several processes on the same host may share. The file runs in WAL mode
 * with `synchronous = NORMAL` (a committed redemption survives a process
 * crash; only an OS crash or power loss can drop the last commits) and a busy
 * timeout so writers queue instead of failing. A redemption is decided by
 * one atomic statement (`INSERT ... ON CONFLICT DO NOTHING RETURNING`, or an
 * `UPDATE ... WHERE used_at IS NULL ... RETURNING` for tokens), which SQLite
 * serialises across processes: exactly one caller wins. Parked requests
 * and decisions work the same way: a compare-and-set `UPDATE ... WHERE
 * version = expected`, and a decision is recorded in one immediate transaction
 * that checks it is pending and in time and that its request still waits at
 * the version the decider read, then records it and bumps that version. Statements are
 * prepared once through drizzle, and writes issued in the same event-loop
 * turn share one commit (`writeBatcher.ts`). WAL needs shared memory, so
 * never put the file on a network filesystem. This module opens the shared
 * handle (`handle.ts`) and assembles the facets, one module each, into a
 * `FullLedger`.
 */
import type { FullLedger } from '@baton/engine';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { withStats } from '../core/stats.js';
import { sqliteDecisions } from './decisions.js';
import { sqliteEvents, sqliteEventWaits } from './events.js';
import { openSqliteHandle } from './handle.js';
import { sqliteHealth } from './health.js';
import { sqliteOutbox, sqliteOutboxWriter } from './outbox.js';
import { sqlitePrune } from './prune.js';
import { sqliteRedemptions } from './redemptions.js';
import { sqliteRequests } from './requests.js';
import { sqliteRuns } from './runs.js';
import { sqliteSchedule } from './schedule.js';
import { sqliteSteps } from './steps.js';

export { createSqliteAuditLog, type SqliteAuditLogOptions } from './audit.js';

/** Options for {@link createSqliteLedger}. */
export interface SqliteLedgerOptions extends PruningOptions {
  /** The database file; created (with its folder) when missing. */
  readonly path: string;
  /** How long a writer waits for another process's write lock, in ms. Default 5000. */
  readonly busyTimeoutMs?: number;
}

/**
 * Open (creating and migrating when needed) the SQLite ledger at `options.path`.
 *
 * Throws a {@link LedgerError} when the file cannot be opened, and a
 * `LedgerSchemaError` when it was migrated by a newer Baton.
 *
 * @example
 * ```ts
 * import { createSqliteLedger } from '@baton/store/better-sqlite3';
 *
 * const ledger = createSqliteLedger({ path: './data/baton-ledger.db' });
 * ```
 */
export function createSqliteLedger(options: SqliteLedgerOptions): FullLedger {
  const handle = openSqliteHandle(options);
  const insertOutbox = sqliteOutboxWriter(handle);

  const counted = withStats(
    {
      redemptions: sqliteRedemptions(handle),
      requests: sqliteRequests(handle, { insertOutbox, replaceWaits: sqliteEventWaits(handle) }),
      decisions: sqliteDecisions(handle),
      steps: sqliteSteps(handle),
      runs: sqliteRuns(handle),
      schedule: sqliteSchedule(handle),
      outbox: sqliteOutbox(handle, insertOutbox),
      events: sqliteEvents(handle),
      prune: sqlitePrune(handle),
      async close(): Promise<void> {
        if (handle.closed) return;
        handle.closed = true;
        await pruning.stop();
        handle.writes.flush();
        handle.client.close();
      },
    },
    sqliteHealth(handle),
  );
  const pruning = startPruning((now) => counted.prune(now), options);
  return counted;
}
