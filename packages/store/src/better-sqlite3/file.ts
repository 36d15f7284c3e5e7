/**
 * Opening a SQLite database file the way the store needs it: folder created,
 * WAL mode, a busy timeout and `synchronous = NORMAL`. Switching a brand-new
 * file to WAL needs a moment of exclusive access, so a process racing others
 * on a fresh file retries briefly. (Same settings as the ledger's own opener,
 * kept in a module of its own so other tables on the ledger's file share it.)
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { describeError, LedgerError } from '../core/errors.js';
import { sleepSync } from '../core/sleep.js';

const OPEN_ATTEMPTS = 5;

/** Open `path` (absolute, or `:memory:`); `what` names it in errors (e.g. `SQLite audit log "/x.db"`). */
export function openSqliteFile(path: string, what: string, busyTimeoutMs: number): Database.Database {
  if (path !== ':memory:') {
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      throw new LedgerError(`Cannot create the folder for the ${what}: ${describeError(error)}`, { cause: error });
    }
  }
  for (let attempt = 1; ; attempt++) {
    let client: Database.Database | undefined;
    try {
      client = new Database(path, { timeout: busyTimeoutMs });
      client.pragma(`busy_timeout = ${busyTimeoutMs}`);
      const mode = client.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal' && path !== ':memory:') {
        throw new LedgerError(`The ${what} refused WAL mode (journal_mode is "${String(mode)}")`);
      }
      client.pragma('synchronous = NORMAL');
      return client;
    } catch (error) {
      client?.close();
      if (error instanceof LedgerError) throw error;
      const busy = (error as { code?: unknown }).code === 'SQLITE_BUSY';
      if (busy && attempt < OPEN_ATTEMPTS) {
        sleepSync(20 * attempt);
        continue;
      }
      throw new LedgerError(`Cannot open the ${what}: ${describeError(error)}`, { cause: error });
    }
  }
}
