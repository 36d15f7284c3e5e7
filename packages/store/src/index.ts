/**
 * `@baton/store`: ledgers that make a requestState single-use, behind the
 * engine's `Ledger` interface. `createMemoryLedger` (one process, tests),
 * `createSqliteLedger` (the embedded default: one WAL file, safe for several
 * processes on one host) and `createPostgresLedger` (many instances), or
 * `openLedger(url)` to pick one from a `sqlite:`, `postgres://` or `memory:`
 * URL. Each creates and migrates its tables itself and prunes expired rows on
 * a schedule.
 */
export { createSqliteLedger, type SqliteLedgerOptions } from './better-sqlite3/index.js';
export { LedgerConnectionError, LedgerError, LedgerSchemaError } from './core/errors.js';
export { SCHEMA_VERSION } from './core/migrations.js';
export { DEFAULT_PRUNE_GRACE_MS, DEFAULT_PRUNE_INTERVAL_MS, type PruningOptions } from './core/pruning.js';
export { createMemoryLedger, type MemoryLedgerOptions } from './memory/index.js';
export { createPostgresLedger, type PostgresLedgerOptions } from './node-postgres/index.js';
export { type LedgerLocation, type OpenLedgerOptions, openLedger, parseLedgerUrl } from './open.js';
