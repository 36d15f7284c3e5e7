/**
 * Start-up migration of a PostgreSQL ledger with drizzle's migrator and the
 * committed `drizzle/pg` folder. Several Baton instances may start at once,
 * so the whole check-migrate-check sequence runs on one connection holding a
 * session advisory lock: the first instance migrates, the others wait and
 * then find nothing to do. A database migrated by a newer Baton is refused
 * before anything is written.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import type pg from 'pg';
import { describeError, LedgerSchemaError } from '../core/errors.js';
import {
  assertCurrent,
  assertNotNewer,
  type DatabaseSchemaState,
  knownMigrations,
  MIGRATIONS_TABLE,
  PG_MIGRATIONS_SCHEMA,
  parseSchemaVersion,
} from '../core/migrations.js';
import { LEGACY_DECIDERS_DONE_KEY } from '../core/requests.js';

/** The advisory lock (two-key form) that serialises ledger migrations: 'bato', 'n'. */
const LOCK_KEYS = sql`1650553967, 110`;

/** Bring the database to the current schema on `client`, or throw a {@link LedgerSchemaError}. */
export async function migratePostgres(client: pg.PoolClient, where: string, lockTimeoutMs: number): Promise<void> {
  const known = knownMigrations('pg');
  const db = drizzle({ client });
  await acquireLock(db, where, lockTimeoutMs);
  try {
    const before = await readSchemaState(db, where);
    assertNotNewer(before, known, where);
    try {
      await migrate(db, {
        migrationsFolder: known.folder,
        migrationsTable: MIGRATIONS_TABLE,
        migrationsSchema: PG_MIGRATIONS_SCHEMA,
      });
    } catch (error) {
      throw new LedgerSchemaError(`Migrating the PostgreSQL ledger ${where} failed: ${describeError(error)}`, {
        cause: error,
      });
    }
    const after = await readSchemaState(db, where);
    assertCurrent(after.schemaVersion, where);
    // A migration ran: legacy deciders may exist again (see LEGACY_DECIDERS_DONE_KEY).
    if (after.newestAppliedMillis !== before.newestAppliedMillis) {
      await db.execute(sql`delete from baton_meta where key = ${LEGACY_DECIDERS_DONE_KEY}`);
    }
  } finally {
    await db.execute(sql`select pg_advisory_unlock(${LOCK_KEYS})`);
  }
}

/** The schema version and newest applied migration recorded in the database (undefined when absent). */
export async function readSchemaState(db: NodePgDatabase, where: string): Promise<DatabaseSchemaState> {
  const qualified = `${PG_MIGRATIONS_SCHEMA}.${MIGRATIONS_TABLE}`;
  const tables = await db.execute<{ meta: boolean; migrations: boolean }>(
    sql`select to_regclass('baton_meta') is not null as meta, to_regclass(${qualified}) is not null as migrations`,
  );
  const found = tables.rows[0]!;

  let schemaVersion: number | undefined;
  if (found.meta) {
    const rows = await db.execute<{ value: string }>(sql`select value from baton_meta where key = 'schema_version'`);
    schemaVersion = parseSchemaVersion(rows.rows[0]?.value, where);
  }
  let newestAppliedMillis: number | undefined;
  if (found.migrations) {
    const rows = await db.execute<{ newest: string | null }>(
      sql`select max(created_at)::text as newest from ${sql.identifier(PG_MIGRATIONS_SCHEMA)}.${sql.identifier(MIGRATIONS_TABLE)}`,
    );
    const newest = rows.rows[0]?.newest;
    newestAppliedMillis = newest === null || newest === undefined ? undefined : Number(newest);
  }
  return { schemaVersion, newestAppliedMillis };
}

async function acquireLock(db: NodePgDatabase, where: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await db.execute<{ locked: boolean }>(sql`select pg_try_advisory_lock(${LOCK_KEYS}) as locked`);
    if (result.rows[0]?.locked) return;
    if (Date.now() >= deadline) {
      throw new LedgerSchemaError(
        `Timed out after ${timeoutMs} ms waiting for another instance to finish migrating the PostgreSQL ledger ${where}`,
      );
    }
    await sleep(100);
  }
}
