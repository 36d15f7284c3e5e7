/**
 * Monitoring counters shared by every ledger driver, so that memory, SQLite
 * and PostgreSQL count the same things the same way. `withStats` wraps a
 * driver's finished facets: it counts redemptions by result and times them
 * (a fixed ring of the most recent samples, so memory stays bounded however
 * long the process runs), counts outcomes recorded and failed calls (of
 * every facet), and adds the `health` facet (`stats()` and `ping()`), built
 * from what the driver's `health.ts` gives it ({@link StatsOptions}). Counting is plain integer increments
 * on the call path; percentiles are computed only when `stats()` is read.
 * Drivers report what only they know (batches sent, the pool) through
 * `BatchCounter` and the `extra` callback.
 */
import {
  type BatchStats,
  type FullLedger,
  type LedgerStats,
  LedgerUnavailableError,
  type RedeemResult,
} from '@baton/engine';
import { type UncountedLedger, wrapFacets } from './facets.js';

/** How many of the most recent redemption times the percentiles are computed over. */
export const LATENCY_WINDOW = 1024;

/** Counts batches and the writes they carry (cumulative). */
export class BatchCounter {
  private sent = 0;
  private items = 0;
  private largest = 0;

  /** Record one batch of `size` writes. */
  readonly record = (size: number): void => {
    this.sent++;
    this.items += size;
    if (size > this.largest) this.largest = size;
  };

  snapshot(): BatchStats {
    return { sent: this.sent, items: this.items, largest: this.largest };
  }
}

/** What a driver adds to {@link withStats}. */
export interface StatsOptions {
  /** `memory`, `sqlite` or `postgres`. */
  readonly driver: string;
  /** One trivial round trip to the database; rejects when it does not answer. */
  readonly ping: () => Promise<void>;
  /** Driver-only figures (batches, pool), read at each `stats()`. */
  readonly extra?: () => Pick<LedgerStats, 'batches' | 'pool'>;
}

/** The `q` quantile (0..1) of ascending `sorted`, nearest rank; 0 when empty. */
function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/**
 * `ledger` with its `health` facet (`stats()` and `ping()`), counting its calls (see the module
 * comment). Every method keeps its behaviour: results and errors pass through unchanged.
 */
export function withStats(ledger: UncountedLedger, options: StatsOptions): FullLedger {
  const redemptions = { redeemed: 0, retried: 0, inProgress: 0, replayed: 0 };
  let outcomesRecorded = 0;
  let unavailableErrors = 0;
  let errors = 0;
  let lastErrorAt: number | null = null;
  const window = new Float64Array(LATENCY_WINDOW);
  let timed = 0;
  let sumMs = 0;

  const failed = (error: unknown): never => {
    errors++;
    if (error instanceof LedgerUnavailableError) unavailableErrors++;
    lastErrorAt = Date.now();
    throw error;
  };

  /** Time a redemption that started at `started` and count it by its result. */
  const counted = (result: RedeemResult, started: number): RedeemResult => {
    const ms = performance.now() - started;
    window[timed % LATENCY_WINDOW] = ms;
    timed++;
    sumMs += ms;
    if (result.status === 'retry') redemptions.retried++;
    else if (result.status === 'in_progress') redemptions.inProgress++;
    else redemptions[result.status]++;
    return result;
  };

  const wrapped = wrapFacets(ledger, (call) => call().catch(failed));
  const source = ledger.redemptions;

  return {
    ...wrapped,
    redemptions: {
      ...wrapped.redemptions,
      async redeem(request) {
        const started = performance.now();
        return counted(await source.redeem(request).catch(failed), started);
      },
      async redeemWithOutcome(request, sealedOutcome) {
        const started = performance.now();
        const result = counted(await source.redeemWithOutcome(request, sealedOutcome).catch(failed), started);
        if (result.status === 'redeemed') outcomesRecorded++;
        return result;
      },
      async recordOutcome(jti, sealedOutcome) {
        await source.recordOutcome(jti, sealedOutcome).catch(failed);
        outcomesRecorded++;
      },
    },
    health: {
      ping: () => options.ping().catch(failed),
      stats(): LedgerStats {
        const sorted = window.slice(0, Math.min(timed, LATENCY_WINDOW)).sort();
        return {
          driver: options.driver,
          redemptions: { ...redemptions },
          outcomesRecorded,
          unavailableErrors,
          errors,
          lastErrorAt,
          redeemLatency: {
            count: timed,
            sumMs,
            p50Ms: quantile(sorted, 0.5),
            p90Ms: quantile(sorted, 0.9),
            p99Ms: quantile(sorted, 0.99),
            maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : 0,
          },
          ...options.extra?.(),
        };
      },
    },
  };
}
