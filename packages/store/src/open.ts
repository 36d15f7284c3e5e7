/**
 * `openLedger(url)`: one string picks the ledger, as the CLI's `--ledger`
 * flag does. `sqlite:PATH` (relative to the working directory; `sqlite:///abs`
 * also works), `postgres://...` or `postgresql://...`, and `memory:`.
 * Anything else is a clear error that lists the accepted forms; a password in
 * the URL never appears in an error. The SQLite and PostgreSQL drivers are
 * imported only when their URL is opened (they are optional peer dependencies).
 */
import type { FullLedger } from '@baton/engine';
import { importDriver } from './core/drivers.js';
import { LedgerError, redactUrl } from './core/errors.js';
import type { PruningOptions } from './core/pruning.js';
import { createMemoryLedger } from './memory/index.js';

/** Options passed on to whichever ledger the URL selects. */
export interface OpenLedgerOptions extends PruningOptions {
  /** SQLite only: busy timeout in ms (default 5000). */
  readonly busyTimeoutMs?: number;
  /** PostgreSQL only: pool size (default 10). */
  readonly maxConnections?: number;
  /** PostgreSQL only: connection timeout in ms (default 5000). */
  readonly connectTimeoutMs?: number;
}

/** The ledger kind and location a URL names. */
export type LedgerLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly connectionString: string }
  | { readonly kind: 'memory' };

const ACCEPTED = 'expected sqlite:PATH, postgres://..., postgresql://... or memory:';

/** Parse a ledger URL without opening anything; throws a {@link LedgerError} for unsupported forms. */
export function parseLedgerUrl(url: string): LedgerLocation {
  const text = typeof url === 'string' ? url.trim() : '';
  const lower = text.toLowerCase();
  if (lower === 'memory:' || lower === 'memory://') return { kind: 'memory' };
  if (lower.startsWith('postgres://') || lower.startsWith('postgresql://')) {
    return { kind: 'postgres', connectionString: text };
  }
  if (lower.startsWith('sqlite:')) {
    let path = text.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path === '') throw new LedgerError(`The ledger URL "${text}" has no file path; ${ACCEPTED}`);
    if (path === ':memory:') throw new LedgerError(`Use "memory:" for an in-memory ledger, not "${text}"`);
    return { kind: 'sqlite', path };
  }
  throw new LedgerError(`Unsupported ledger URL "${redactUrl(text)}"; ${ACCEPTED}`);
}

/**
 * Open the ledger a URL names (creating and migrating its tables when needed).
 *
 * @example
 * ```ts
 * import { openLedger } from '@baton/store';
 *
 * const ledger = await openLedger('sqlite:./data/baton-ledger.db');
 * const shared = await openLedger('postgres://baton@db.internal:5432/baton');
 * ```
 */
export async function openLedger(url: string, options: OpenLedgerOptions = {}): Promise<FullLedger> {
  const location = parseLedgerUrl(url);
  const { busyTimeoutMs, maxConnections, connectTimeoutMs, ...pruning } = options;
  switch (location.kind) {
    case 'memory':
      return createMemoryLedger(pruning);
    case 'sqlite': {
      const { createSqliteLedger } = await importDriver('sqlite', 'ledger', () => import('./better-sqlite3/index.js'));
      return createSqliteLedger({ ...pruning, path: location.path, busyTimeoutMs });
    }
    case 'postgres': {
      const { createPostgresLedger } = await importDriver(
        'postgres',
        'ledger',
        () => import('./node-postgres/index.js'),
      );
      return createPostgresLedger({
        ...pruning,
        connectionString: location.connectionString,
        maxConnections,
        connectTimeoutMs,
      });
    }
  }
}
