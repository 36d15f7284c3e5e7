/**
 * Start-up migration of a SQLite ledger file with drizzle's migrator and the
 * committed `drizzle/sqlite` folder. drizzle reads the last applied migration
 * outside its transaction, so two processes opening a fresh file at the same
 * moment can both try to create the tables; the loser's transaction rolls
 * back untouched and is retried, by which time the winner's migrations are
 * recorded and nothing is left to apply. A file migrated by a newer Baton is
 * refused before anything is written.
 */
import { sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { describeError, LedgerSchemaError } from '../core/errors.js';
import {
  assertCurrent,
  assertNotNewer,
  type DatabaseSchemaState,
  knownMigrations,
  MIGRATIONS_TABLE,
  parseSchemaVersion,
} from '../core/migrations.js';
import { LEGACY_DECIDERS_DONE_KEY } from '../core/requests.js';
import { sleepSync } from '../core/sleep.js';

const ATTEMPTS = 5;

/** Bring the ledger file at `where` to the current schema, or throw a {@link LedgerSchemaError}. */
export function migrateSqlite(db: BetterSQLite3Database, where: string): void {
  const known = knownMigrations('sqlite');
  for (let attempt = 1; ; attempt++) {
    try {
      const before = readSchemaState(db, where);
      assertNotNewer(before, known, where);
      migrate(db, { migrationsFolder: known.folder, migrationsTable: MIGRATIONS_TABLE });
      const after = readSchemaState(db, where);
      assertCurrent(after.schemaVersion, where);
      // A migration ran: legacy deciders may exist again (see LEGACY_DECIDERS_DONE_KEY).
      if (after.newestAppliedMillis !== before.newestAppliedMillis) {
        db.run(sql`delete from baton_meta where key = ${LEGACY_DECIDERS_DONE_KEY}`);
      }
      return;
    } catch (error) {
      if (error instanceof LedgerSchemaError) throw error;
      if (attempt >= ATTEMPTS) {
        throw new LedgerSchemaError(`Migrating the SQLite ledger ${where} failed: ${describeError(error)}`, {
          cause: error,
        });
      }
      sleepSync(20 * attempt + Math.floor(Math.random() * 20));
    }
  }
}

/** The schema version and newest applied migration recorded in the file (undefined when absent). */
export function readSchemaState(db: BetterSQLite3Database, where: string): DatabaseSchemaState {
  const hasTable = (name: string) =>
    db.get<{ found: number } | undefined>(
      sql`select 1 as found from sqlite_master where type = 'table' and name = ${name}`,
    ) !== undefined;

  let schemaVersion: number | undefined;
  if (hasTable('baton_meta')) {
    const row = db.get<{ value: string } | undefined>(sql`select value from baton_meta where key = 'schema_version'`);
    schemaVersion = parseSchemaVersion(row?.value, where);
  }
  let newestAppliedMillis: number | undefined;
  if (hasTable(MIGRATIONS_TABLE)) {
    const row = db.get<{ newest: number | null }>(
      sql`select max(cast(created_at as integer)) as newest from ${sql.identifier(MIGRATIONS_TABLE)}`,
    );
    newestAppliedMillis = row.newest ?? undefined;
  }
  return { schemaVersion, newestAppliedMillis };
}
