/**
 * `openAuditLog(url)`: the audit trail on the database a ledger URL names
 * (`sqlite:PATH`, `postgres://...`, `postgresql://...` or `memory:`), as
 * `openLedger` does. Pass the ledger's URL to keep the trail next to the
 * ledger. Entries older than `retentionMs` (7 days by default) are pruned on
 * an unref'd timer. Like `openLedger`, it imports the database driver only
 * when its URL is opened.
 */
import type { AuditLogOptions, StoreAuditLog } from './core/audit.js';
import { importDriver } from './core/drivers.js';
import { createMemoryAuditLog } from './memory/audit.js';
import { parseLedgerUrl } from './open.js';

/** Options passed on to whichever audit log the URL selects. */
export interface OpenAuditLogOptions extends AuditLogOptions {
  /** SQLite only: busy timeout in ms (default 5000). */
  readonly busyTimeoutMs?: number;
  /** PostgreSQL only: pool size (default 4). */
  readonly maxConnections?: number;
  /** PostgreSQL only: connection timeout in ms (default 5000). */
  readonly connectTimeoutMs?: number;
}

/**
 * Open the audit log on the database a URL names (creating and migrating its tables when needed).
 *
 * @example
 * ```ts
 * import { createRunner } from '@baton/engine';
 * import { openAuditLog } from '@baton/store';
 *
 * const audit = await openAuditLog('sqlite:./data/baton-ledger.db', { retentionMs: 3 * 24 * 3600_000 });
 * const runner = createRunner({ ...options, audit });
 * ```
 */
export async function openAuditLog(url: string, options: OpenAuditLogOptions = {}): Promise<StoreAuditLog> {
  const location = parseLedgerUrl(url);
  const { busyTimeoutMs, maxConnections, connectTimeoutMs, ...common } = options;
  switch (location.kind) {
    case 'memory':
      return createMemoryAuditLog(common);
    case 'sqlite': {
      const { createSqliteAuditLog } = await importDriver(
        'sqlite',
        'audit log',
        () => import('./better-sqlite3/audit.js'),
      );
      return createSqliteAuditLog({ ...common, path: location.path, busyTimeoutMs });
    }
    case 'postgres': {
      const { createPostgresAuditLog } = await importDriver(
        'postgres',
        'audit log',
        () => import('./node-postgres/audit.js'),
      );
      return createPostgresAuditLog({
        ...common,
        connectionString: location.connectionString,
        maxConnections,
        connectTimeoutMs,
      });
    }
  }
}
