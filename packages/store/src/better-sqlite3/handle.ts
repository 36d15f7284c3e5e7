/**
 * The SQLite ledger's shared handle: the better-sqlite3 client and its
 * drizzle wrapper, the quoted path for messages, the `WriteBatcher` every
 * write goes through (so a process's writes keep their order and share a
 * commit per event-loop turn), and the closed flag. Each facet module
 * (`redemptions.ts`, `requests.ts`, ...) prepares its statements once from a
 * `SqliteHandle`; `index.ts` opens it.
 *
 * ```ts
 * const handle = openSqliteHandle({ path: './data/baton-ledger.db' });
 * await handle.writes.submit(() => statement.run(params)); // one commit shared with this turn's writes
 * handle.assertOpen(); // throws LedgerError once handle.closed is set
 * ```
 */
import type Database from 'better-sqlite3';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { LedgerError } from '../core/errors.js';
import { openMigratedSqlite } from './file.js';
import { WriteBatcher } from './writeBatcher.js';

/** What every facet of the SQLite ledger shares (see the module comment). */
export interface SqliteHandle {
  readonly client: Database.Database;
  readonly db: BetterSQLite3Database;
  /** The quoted absolute path, for messages. */
  readonly where: string;
  /**
   * The writes of parked requests and decisions go through the same batcher as redemptions.
   * Not for throughput (they are rare) but for order and atomicity: a write that skipped the
   * queue would overtake writes this process issued before it in the same event-loop turn
   * (a redemption, an outcome), and each write is one synchronous closure, so a conditional
   * update and the read that explains a lost race run back to back, inside the batch's
   * transaction when there is one. Multi-statement writes wrap themselves in a transaction
   * (a savepoint inside a batch), so a failure undoes all of that write and nothing else.
   */
  readonly writes: WriteBatcher;
  closed: boolean;
  /** Throws once the ledger is closed. */
  assertOpen(): void;
}

/** Open (creating and migrating when needed) the file `options.path` names. */
export function openSqliteHandle(options: { readonly path: string; readonly busyTimeoutMs?: number }): SqliteHandle {
  const { client, db, where } = openMigratedSqlite(options, { factory: 'createSqliteLedger', what: 'SQLite ledger' });
  const handle: SqliteHandle = {
    client,
    db,
    where,
    writes: new WriteBatcher(client),
    closed: false,
    assertOpen() {
      if (handle.closed) throw new LedgerError(`The SQLite ledger ${where} is closed`);
    },
  };
  return handle;
}
