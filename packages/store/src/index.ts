/**
 * `@baton/store`: ledgers that make a requestState single-use, behind the
 * engine's `Ledger` interface. `openLedger(url)` picks one from a `sqlite:`,
 * `postgres://` or `memory:` URL: the embedded SQLite default (one WAL file,
 * safe for several processes on one host), PostgreSQL (many instances) or
 * memory (one process, tests). Each creates and migrates its tables itself
 * and prunes expired rows on a schedule. The audit trail lives on the same
 * database: `openAuditLog(url)`. This entry loads no database driver:
 * better-sqlite3 and pg are optional peer dependencies, imported when a URL
 * needs one. The factories live on the subpaths, one per driver:
 * `@baton/store/better-sqlite3` (`createSqliteLedger`, `createSqliteAuditLog`),
 * `@baton/store/node-postgres` (`createPostgresLedger`,
 * `createPostgresAuditLog`) and `@baton/store/memory`, whose two factories
 * are also exported here.
 */
export {
  AuditEntryError,
  type AuditLogOptions,
  DEFAULT_AUDIT_INSTANCES_LIMIT,
  DEFAULT_AUDIT_RETENTION_MS,
  type StoreAuditLog,
} from './core/audit.js';
export { LedgerConnectionError, LedgerError, LedgerSchemaError } from './core/errors.js';
export { DEFAULT_PRUNE_GRACE_MS, DEFAULT_PRUNE_INTERVAL_MS, type PruningOptions } from './core/pruning.js';
export { createMemoryAuditLog, type MemoryAuditLogOptions } from './memory/audit.js';
export { createMemoryLedger, type MemoryLedgerOptions } from './memory/index.js';
export { type LedgerLocation, type OpenLedgerOptions, openLedger, parseLedgerUrl } from './open.js';
export { type OpenAuditLogOptions, openAuditLog } from './open-audit.js';
