/**
 * The PostgreSQL ledger on node-postgres, for deployments where many Baton
 * instances share one database behind a load balancer. Same tables and
 * semantics as the SQLite ledger: a redemption is one atomic
 * `INSERT ... ON CONFLICT DO NOTHING RETURNING` (PostgreSQL's unique index
 * makes exactly one concurrent inserter win, on any instance), a token is
 * used by one `UPDATE ... WHERE used_at IS NULL AND expires_at > now
 * RETURNING`. A parked request is rewritten by a compare-and-set `UPDATE ...
 * WHERE version = expected`, and a decision recorded in one transaction that
 * locks its request's row, checks the decision is pending and in time and the
 * request still waits at the version the decider read, then records it and
 * bumps that version: row locks make exactly one concurrent writer win. Opening connects and migrates at
 * once, so an unreachable or misconfigured database fails at start-up with a
 * clear error rather than on the first request. Statements are prepared (named) through drizzle
 * (the decision's transaction excepted).
 * Redemptions and their outcomes are batched by default (`redemptionBatches.ts`): concurrent
 * ones share one statement and one commit. A connection failure during any call (the
 * server restarting, say) rejects with the engine's retryable `LedgerUnavailableError`
 * (`unavailable.ts`); the pool reconnects by itself on the next call. Recording an
 * outcome is retried through such failures for up to 15 s: its round has already run.
 * This module opens the shared handle (`handle.ts`) and assembles the facets,
 * one module each, into a `FullLedger`.
 */
import type { FullLedger } from '@baton/engine';
import { type UncountedLedger, wrapFacets } from '../core/facets.js';
import { type PruningOptions, startPruning } from '../core/pruning.js';
import { withStats } from '../core/stats.js';
import type { PostgresConnectionOptions } from './connect.js';
import { postgresDecisions } from './decisions.js';
import { createEventBatches } from './eventBatches.js';
import { postgresEvents } from './events.js';
import { openPostgresHandle } from './handle.js';
import { postgresHealth } from './health.js';
import { postgresOutbox } from './outbox.js';
import { postgresPrune } from './prune.js';
import type { RedemptionBatching } from './redemptionBatches.js';
import { postgresRedemptions } from './redemptions.js';
import { postgresRequests } from './requests.js';
import { createRewriteBatches } from './rewriteBatches.js';
import { postgresRuns } from './runs.js';
import { postgresSchedule } from './schedule.js';
import { postgresSteps } from './steps.js';
import { toUnavailable } from './unavailable.js';

export { createPostgresAuditLog, type PostgresAuditLogOptions } from './audit.js';
export type { RedemptionBatching } from './redemptionBatches.js';

/**
 * Options for the ledger: give `connectionString` or `pool`, not both
 * (a pool created from the URL has 10 connections unless `maxConnections` says otherwise).
 */
export interface PostgresLedgerOptions extends PruningOptions, PostgresConnectionOptions {
  /**
   * How concurrent redemptions and outcomes are batched into one statement each; `false`
   * sends one statement per call (the way before batching, kept for comparison).
   * Default `{ maxBatch: 500, maxInFlight: 1, lingerMs: 3 }`.
   */
  readonly batching?: RedemptionBatching | false;
}

/**
 * Connect to PostgreSQL, migrate the ledger tables when needed, and return the ledger.
 *
 * Rejects with a `LedgerConnectionError` when the server cannot be reached and a
 * `LedgerSchemaError` when the database was migrated by a newer Baton.
 *
 * @example
 * ```ts
 * import { createPostgresLedger } from '@baton/store/node-postgres';
 *
 * const ledger = await createPostgresLedger({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export async function createPostgresLedger(options: PostgresLedgerOptions): Promise<FullLedger> {
  const handle = await openPostgresHandle(options);
  const { connection, batches, where } = handle;
  // Events and rewrites are batched when redemptions are (`batching: false` turns all off).
  const eventBatches = batches ? createEventBatches(connection.pool) : undefined;
  const rewriteBatches = batches ? createRewriteBatches(connection.pool) : undefined;

  const ledger: UncountedLedger = {
    redemptions: postgresRedemptions(handle),
    requests: postgresRequests(handle, rewriteBatches),
    decisions: postgresDecisions(handle),
    steps: postgresSteps(handle),
    runs: postgresRuns(handle),
    schedule: postgresSchedule(handle),
    outbox: postgresOutbox(handle),
    events: postgresEvents(handle, eventBatches),
    prune: postgresPrune(handle),
    async close(): Promise<void> {
      if (connection.closed) return;
      await pruning.stop();
      handle.closing = true;
      await batches?.drain();
      await eventBatches?.drain();
      await rewriteBatches?.drain();
      await connection.close();
    },
  };

  const guarded = guardConnectionFailures(ledger, where);
  const counted = withStats(guarded, postgresHealth(handle));
  const pruning = startPruning((now) => counted.prune(now), options);
  return counted;
}

/** `ledger` with every call's connection failures turned into `LedgerUnavailableError`. */
function guardConnectionFailures(ledger: UncountedLedger, where: string): UncountedLedger {
  return wrapFacets(ledger, (call) =>
    call().catch((error: unknown) => {
      throw toUnavailable(error, where);
    }),
  );
}
