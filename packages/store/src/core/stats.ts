/**
 * Monitoring counters shared by every ledger driver, so that memory, SQLite
 * and PostgreSQL count the same things the same way. `withStats` wraps a
 * driver's finished ledger: it counts redemptions by result and times them
 * (a fixed ring of the most recent samples, so memory stays bounded however
 * long the process runs), counts outcomes recorded and failed calls, and adds
 * `stats()` and `ping()` to the ledger. Counting is plain integer increments
 * on the call path; percentiles are computed only when `stats()` is read.
 * Drivers report what only they know (batches sent, the pool) through
 * `BatchCounter` and the `extra` callback.
 */
import { type BatchStats, type Ledger, type LedgerStats, LedgerUnavailableError } from '@baton/engine';

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
 * `ledger` with `stats()` and `ping()`, counting its calls (see the module comment). Every method
 * keeps its behaviour: results and errors pass through unchanged.
 */
export function withStats(ledger: Ledger, options: StatsOptions): Ledger {
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

  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(ledger) as [string, (...args: unknown[]) => Promise<unknown>][]) {
    if (typeof method !== 'function') continue;
    wrapped[name] =
      name === 'close' ? method.bind(ledger) : (...args: unknown[]) => method.apply(ledger, args).catch(failed);
  }

  const counted: Ledger = {
    ...(wrapped as unknown as Ledger),
    async redeem(request) {
      const started = performance.now();
      const result = await ledger.redeem(request).catch(failed);
      const ms = performance.now() - started;
      window[timed % LATENCY_WINDOW] = ms;
      timed++;
      sumMs += ms;
      if (result.status === 'retry') redemptions.retried++;
      else if (result.status === 'in_progress') redemptions.inProgress++;
      else redemptions[result.status]++;
      return result;
    },
    async recordOutcome(jti, sealedOutcome) {
      await ledger.recordOutcome(jti, sealedOutcome).catch(failed);
      outcomesRecorded++;
    },
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
  };
  return counted;
}
