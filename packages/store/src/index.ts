/**
 * `@baton/store`: ledgers that make a requestState single-use, behind the
 * engine's `Ledger` interface. `createMemoryLedger` (one process, tests),
 * `createSqliteLedger` (the embedded default: one WAL file, safe for several
 * processes on one host) and `createPostgresLedger` (many instances), or
 * `openLedger(url)` to pick one from a `sqlite:`, `postgres://` or `memory:`
 * URL. Each creates and migrates its tables itself and prunes expired rows on
 * a schedule. The audit trail lives on the same database: `openAuditLog(url)`,
 * or `createSqliteAuditLog`, `createPostgresAuditLog`, `createMemoryAuditLog`.
 */
export { createSqliteAuditLog, type SqliteAuditLogOptions } from './better-sqlite3/audit.js';
export { createSqliteLedger, type SqliteLedgerOptions } from './better-sqlite3/index.js';
export {
  AuditEntryError,
  type AuditLogOptions,
  DEFAULT_AUDIT_INSTANCES_LIMIT,
  DEFAULT_AUDIT_RETENTION_MS,
  type StoreAuditLog,
} from './core/audit.js';
export { LedgerConnectionError, LedgerError, LedgerSchemaError } from './core/errors.js';
export { SCHEMA_VERSION } from './core/migrations.js';
export { DEFAULT_PRUNE_GRACE_MS, DEFAULT_PRUNE_INTERVAL_MS, type PruningOptions } from './core/pruning.js';
export { createMemoryAuditLog, type MemoryAuditLogOptions } from './memory/audit.js';
export { createMemoryLedger, type MemoryLedgerOptions } from './memory/index.js';
export { createPostgresAuditLog, type PostgresAuditLogOptions } from './node-postgres/audit.js';
export { createPostgresLedger, type PostgresLedgerOptions } from './node-postgres/index.js';
export { type LedgerLocation, type OpenLedgerOptions, openLedger, parseLedgerUrl } from './open.js';
export { type OpenAuditLogOptions, openAuditLog } from './open-audit.js';
