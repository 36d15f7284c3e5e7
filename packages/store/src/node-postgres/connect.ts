/**
 * Connecting to PostgreSQL the way the store needs it, for the ledger and the
 * audit log alike: exactly one of a URL or a pool, a pool of our own when
 * given a URL (idle-connection errors logged, not thrown), the password
 * never shown, the schema migrated before first use, and the pool ended again
 * when that fails. `close()` ends only a pool this module created.
 */
import pg from 'pg';
import { describeError, LedgerConnectionError, LedgerError, redactUrl } from '../core/errors.js';
import { migratePostgres } from './migrate.js';

/** Connection options shared by the PostgreSQL ledger and audit log. */
export interface PostgresConnectionOptions {
  /** `postgres://user:password@host:port/database` (any libpq-style URL node-postgres accepts). */
  readonly connectionString?: string;
  /** An existing pool to use instead; it is never ended here (you end it, after `close()`). */
  readonly pool?: pg.Pool;
  /** Pool size when a pool is created from `connectionString`. */
  readonly maxConnections?: number;
  /** How long to wait for a connection, in ms, when a pool is created. Default 5000. */
  readonly connectTimeoutMs?: number;
  /** How long to wait for another instance's migration to finish, in ms. Default 60 000. */
  readonly migrationLockTimeoutMs?: number;
}

/** A migrated connection: the pool, how to name it in messages, and how to let it go. */
export interface PostgresConnection {
  readonly pool: pg.Pool;
  /** The redacted URL, for messages. */
  readonly where: string;
  /** Whether `close()` has been called. */
  readonly closed: boolean;
  /** Mark closed; end the pool when it was created here. */
  close(): Promise<void>;
}

/**
 * Connect and migrate. `what` names the user in messages ("ledger", "audit log");
 * `factory` names the calling function in usage errors.
 */
export async function connectPostgres(
  options: PostgresConnectionOptions,
  naming: { what: string; factory: string; defaultMaxConnections: number; applicationName: string },
): Promise<PostgresConnection> {
  if ((options?.connectionString === undefined) === (options?.pool === undefined)) {
    throw new LedgerError(`${naming.factory} needs exactly one of \`connectionString\` or \`pool\``);
  }
  const ownsPool = options.pool === undefined;
  const where =
    options.connectionString !== undefined ? redactUrl(options.connectionString) : describePool(options.pool!);
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      max: options.maxConnections ?? naming.defaultMaxConnections,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
      application_name: naming.applicationName,
    });
  let closed = false;
  if (ownsPool) {
    // An idle connection dropped by the server must not crash the process; the next query
    // reconnects. After close(), connections still saying goodbye may report the server's
    // shutdown: not worth a line.
    pool.on('error', (error) => {
      if (closed) return;
      console.error(`[baton/store] PostgreSQL ${naming.what} ${where}: idle connection error:`, describeError(error));
    });
  }
  const close = async () => {
    closed = true;
    if (ownsPool) await pool.end();
  };

  try {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw new LedgerConnectionError(
        `Cannot connect to the PostgreSQL ${naming.what} at ${where}: ${describeError(error)}`,
        { cause: error },
      );
    }
    try {
      await migratePostgres(client, where, options.migrationLockTimeoutMs ?? 60_000);
    } finally {
      client.release();
    }
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
  return {
    pool,
    where,
    get closed() {
      return closed;
    },
    close,
  };
}

function describePool(pool: pg.Pool): string {
  const o = pool.options as pg.PoolConfig;
  if (o.connectionString) return redactUrl(o.connectionString);
  return `postgres://${o.host ?? 'localhost'}:${o.port ?? 5432}/${o.database ?? ''}`;
}
