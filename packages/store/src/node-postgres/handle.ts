/**
 * The PostgreSQL ledger's shared handle: the migrated connection (pool,
 * redacted URL, closed flag), its drizzle wrapper, the redemption and
 * outcome batches with their counters (`redemptionBatches.ts`; absent when
 * batching is off), the closing flag, and `byCodePoint`, the text order
 * every listing sorts by. Each facet module (`redemptions.ts`,
 * `requests.ts`, ...) prepares its statements once from a `PostgresHandle`;
 * `index.ts` opens it.
 *
 * ```ts
 * const handle = await openPostgresHandle({ connectionString: process.env.DATABASE_URL });
 * const [row] = await statement.execute(params); // named prepared statement on handle.db
 * handle.assertOpen(); // throws LedgerError once the ledger is closing or closed
 * ```
 */
import { sql } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { LedgerError } from '../core/errors.js';
import { BatchCounter } from '../core/stats.js';
import { connectPostgres, type PostgresConnection, type PostgresConnectionOptions } from './connect.js';
import { createRedemptionBatches, DEFAULT_REDEMPTION_BATCHING, type RedemptionBatching } from './redemptionBatches.js';

/** What every facet of the PostgreSQL ledger shares (see the module comment). */
export interface PostgresHandle {
  readonly connection: PostgresConnection;
  readonly db: NodePgDatabase;
  /** The redacted URL, for messages. */
  readonly where: string;
  /** Batched redemptions and outcomes, or `undefined` when `batching` is `false`. */
  readonly batches: ReturnType<typeof createRedemptionBatches> | undefined;
  /** Batches sent, for `stats()`. */
  readonly batchCounts: { readonly redeem: BatchCounter; readonly outcome: BatchCounter };
  /** Set by `close()` before it drains the batches: new calls are refused from then on. */
  closing: boolean;
  /** Throws once the ledger is closing or closed. */
  assertOpen(): void;
}

/** A transaction of {@link PostgresHandle.db}. */
export type Tx = Parameters<Parameters<NodePgDatabase['transaction']>[0]>[0];

/** Text ordered by code point (as SQLite and the memory ledger order it), whatever the database's collation. */
export const byCodePoint = (column: AnyPgColumn) => sql`${column} collate "C"`;

/** Connect, migrate and set up the batches (see {@link PostgresHandle}). */
export async function openPostgresHandle(
  options: PostgresConnectionOptions & { readonly batching?: RedemptionBatching | false },
): Promise<PostgresHandle> {
  const connection = await connectPostgres(options, {
    what: 'ledger',
    factory: 'createPostgresLedger',
    defaultMaxConnections: 10,
    applicationName: 'baton-ledger',
  });
  const { pool, where } = connection;
  const db = drizzle({ client: pool });
  const batchCounts = { redeem: new BatchCounter(), outcome: new BatchCounter() };
  const batches =
    options.batching === false
      ? undefined
      : createRedemptionBatches(pool, options.batching ?? DEFAULT_REDEMPTION_BATCHING, {
          redeem: batchCounts.redeem.record,
          outcome: batchCounts.outcome.record,
        });

  const handle: PostgresHandle = {
    connection,
    db,
    where,
    batches,
    batchCounts,
    closing: false,
    assertOpen() {
      if (connection.closed || handle.closing) throw new LedgerError(`The PostgreSQL ledger ${where} is closed`);
    },
  };
  return handle;
}
