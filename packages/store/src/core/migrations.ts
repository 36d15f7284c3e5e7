/**
 * What the drivers share about migrations: where the committed drizzle-kit
 * folders are, which migration is the newest this code knows, the schema
 * version it expects in `baton_meta`, and the refusal to touch a database that
 * a newer Baton already migrated. Each driver reads the database's state,
 * calls {@link assertNotNewer} before running drizzle's migrator, and
 * {@link assertCurrent} after it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LedgerSchemaError } from './errors.js';

/**
 * The ledger schema version this code reads and writes (set in `baton_meta` by the
 * migrations): 1, the ledger tables; 2, the audit trail (`baton_audit`); 3, parked requests
 * and the decisions they wait for (`baton_requests`, `baton_decisions`); 4, durable steps
 * (`baton_steps`); 5, the audit trail's arguments, readable principal and state expiry; 6,
 * deciders as keyed hashes (`baton_decisions.decider`, the readable `decider_name` only when
 * names are stored; rows decided before are rewritten by the engine, see `rewriteLegacyDeciders`); 7,
 * whose call ran each audited round (`baton_audit.via`); 8, durable timers of parked requests
 * (`baton_requests.due_at`, claimed under a lease) and the notification outbox (`baton_outbox`);
 * 9, event waits of parked requests (`baton_event_waits`) and received events (`baton_events`);
 * 10, the index `baton runs list` pages on (`baton_requests` by `updated_at` descending, then `id`);
 * 11, votes of quorum decisions (`baton_decision_votes`) and the display name and channel of
 * recorded decisions (`baton_decisions.decider_display`, `via`);
 * 12, delegation: hand-overs and decisions made for someone on `baton_decisions` (`assignee`,
 * `handover`, `on_behalf_of`, `on_behalf_of_name`) and absence delegates (`baton_delegations`);
 * 13, the W3C traceparent of the round that raised each outbox row (`baton_outbox.trace_context`).
 */
export const SCHEMA_VERSION = 13;

/** drizzle's bookkeeping table for the ledger's migrations (kept apart from any app's own). */
export const MIGRATIONS_TABLE = '__baton_migrations';

/** The PostgreSQL schema holding {@link MIGRATIONS_TABLE} (drizzle's default). */
export const PG_MIGRATIONS_SCHEMA = 'drizzle';

/** Which migration folder. */
export type Dialect = 'sqlite' | 'pg';

/** The newest migration committed for a dialect, from its drizzle-kit journal. */
export interface KnownMigrations {
  /** Absolute path of the migrations folder (for drizzle's migrator). */
  readonly folder: string;
  /** How many migrations exist. */
  readonly count: number;
  /** The `when` (ms) of the newest one: drizzle records it as `created_at`. */
  readonly newestMillis: number;
  /** Its tag, for messages. */
  readonly newestTag: string;
}

/** The committed migrations for `dialect` (`packages/store/drizzle/<dialect>`). */
export function knownMigrations(dialect: Dialect): KnownMigrations {
  const folder = fileURLToPath(new URL(`../../drizzle/${dialect}`, import.meta.url));
  const journal = JSON.parse(readFileSync(`${folder}/meta/_journal.json`, 'utf8')) as {
    entries: { when: number; tag: string }[];
  };
  const newest = journal.entries.at(-1);
  if (!newest) throw new LedgerSchemaError(`No migrations found in ${folder}`);
  return { folder, count: journal.entries.length, newestMillis: newest.when, newestTag: newest.tag };
}

/** What a driver found in the database before migrating. */
export interface DatabaseSchemaState {
  /** `baton_meta.schema_version`, or undefined when the table or row does not exist yet. */
  readonly schemaVersion: number | undefined;
  /** The greatest `created_at` in the migrations table, or undefined when none ran. */
  readonly newestAppliedMillis: number | undefined;
}

/** Parse a stored schema version; garbage is a schema error, not a silent 0. */
export function parseSchemaVersion(value: string | null | undefined, where: string): number | undefined {
  if (value === null || value === undefined) return undefined;
  const version = Number(value);
  if (!Number.isInteger(version) || version < 0) {
    throw new LedgerSchemaError(`The ledger database ${where} has an unreadable schema_version "${value}"`);
  }
  return version;
}

/**
 * Refuse a database migrated by a newer Baton: its schema version or its newest
 * migration is beyond what this code knows. Nothing has been written yet.
 */
export function assertNotNewer(state: DatabaseSchemaState, known: KnownMigrations, where: string): void {
  if (state.schemaVersion !== undefined && state.schemaVersion > SCHEMA_VERSION) {
    throw new LedgerSchemaError(
      `The ledger database ${where} has schema version ${state.schemaVersion}, newer than the ${SCHEMA_VERSION} ` +
        'this version of @baton/store knows. Upgrade Baton (or point it at another database); the database was not modified.',
    );
  }
  if (state.newestAppliedMillis !== undefined && state.newestAppliedMillis > known.newestMillis) {
    throw new LedgerSchemaError(
      `The ledger database ${where} has a migration (created_at ${state.newestAppliedMillis}) newer than the newest ` +
        `this version of @baton/store knows (${known.newestTag}, ${known.newestMillis}). Upgrade Baton (or point it at ` +
        'another database); the database was not modified.',
    );
  }
}

/** After migrating, the database must be exactly at {@link SCHEMA_VERSION}. */
export function assertCurrent(schemaVersion: number | undefined, where: string): void {
  if (schemaVersion !== SCHEMA_VERSION) {
    throw new LedgerSchemaError(
      `The ledger database ${where} is at schema version ${schemaVersion ?? 'none'} after migrating; expected ${SCHEMA_VERSION}.`,
    );
  }
}
