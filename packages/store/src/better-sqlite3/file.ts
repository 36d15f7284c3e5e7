/**
 * Opening a SQLite database file the way the store needs it, for the ledger
 * and the audit log alike: folder created, WAL mode, a busy timeout,
 * `synchronous = NORMAL` and a longer checkpoint interval. Switching a
 * brand-new file to WAL needs a moment of exclusive access, so a process
 * racing others on a fresh file retries briefly. `openMigratedSqlite` adds the
 * option checks and the migration both factories need before first use.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3';
import { describeError, LedgerError } from '../core/errors.js';
import { sleepSync } from '../core/sleep.js';
import { migrateSqlite } from './migrate.js';

const OPEN_ATTEMPTS = 5;
const WAL_AUTOCHECKPOINT_PAGES = 10_000;

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
      // jtis are random, so every redemption dirties a different index page: checkpointing
      // every 10 000 pages (about 40 MB of WAL) instead of SQLite's 1 000 writes each page
      // back once per interval instead of many times (measured: +15-25% with requests in
      // flight). The WAL file is truncated back to 64 MB after a checkpoint.
      client.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
      client.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
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

/** A migrated SQLite database: the raw client, its drizzle wrapper, and how to name it in messages. */
export interface MigratedSqlite {
  readonly client: Database.Database;
  readonly db: BetterSQLite3Database;
  /** The quoted absolute path, for messages. */
  readonly where: string;
}

/**
 * Check `path` and `busyTimeoutMs`, open the file (see {@link openSqliteFile}) and migrate it.
 * `factory` names the caller in usage errors; `what` names the user in messages ("SQLite ledger").
 */
export function openMigratedSqlite(
  options: { readonly path: string; readonly busyTimeoutMs?: number },
  naming: { factory: string; what: string },
): MigratedSqlite {
  if (typeof options?.path !== 'string' || options.path.trim() === '') {
    throw new LedgerError(`${naming.factory} needs a non-empty \`path\``);
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
  if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new LedgerError(`busyTimeoutMs must be an integer >= 0, got ${busyTimeoutMs}`);
  }
  const path = options.path === ':memory:' ? ':memory:' : resolve(options.path);
  const where = `"${path}"`;
  const client = openSqliteFile(path, `${naming.what} ${where}`, busyTimeoutMs);
  const db = drizzle({ client });
  try {
    migrateSqlite(db, where);
  } catch (error) {
    client.close();
    throw error;
  }
  return { client, db, where };
}
