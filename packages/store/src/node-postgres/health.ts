/**
 * What the PostgreSQL ledger's `health` facet reads from it: the driver's
 * name, a ping that runs `select 1` on the pool (a connection failure
 * rejects with `LedgerUnavailableError`), and the figures only this driver
 * has (batches sent, the pool now). `withStats` (core/stats.ts) builds the
 * facet from it with the ledger's counters.
 */
import type { StatsOptions } from '../core/stats.js';
import type { PostgresHandle } from './handle.js';
import { toUnavailable } from './unavailable.js';

/** The PostgreSQL ledger's health source (see the module comment). */
export function postgresHealth(handle: PostgresHandle): StatsOptions {
  const { connection, batches, batchCounts, where, assertOpen } = handle;
  const { pool } = connection;
  return {
    driver: 'postgres',
    ping: async () => {
      assertOpen();
      await pool.query('select 1').catch((error: unknown) => {
        throw toUnavailable(error, where);
      });
    },
    extra: () => ({
      ...(batches
        ? { batches: { redeem: batchCounts.redeem.snapshot(), outcome: batchCounts.outcome.snapshot() } }
        : {}),
      pool: { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount },
    }),
  };
}
