/**
 * The pruning schedule every ledger runs: an unref'd interval timer (it never
 * keeps a process alive) that calls the ledger's `prune` with the current
 * time minus a grace period. The grace matters with several instances: their
 * clocks differ, and a row must outlive every instance's idea of its expiry,
 * otherwise a lagging instance could accept the envelope again after another
 * pruned its row. Runs never overlap; failures go to `onPruneError`.
 */

/** Scheduling options shared by every ledger factory. */
export interface PruningOptions {
  /**
   * How often expired rows are deleted, in ms. Default 60 000. `0` disables the
   * schedule (call `prune(now)` yourself).
   */
  readonly pruneIntervalMs?: number;
  /**
   * How long after its expiry a row is kept by the schedule, in ms, to absorb clock
   * differences between instances. Default 300 000 (5 minutes). Explicit
   * `prune(now)` calls are not affected.
   */
  readonly pruneGraceMs?: number;
  /** Called when a scheduled prune fails. Default: a line on stderr. */
  readonly onPruneError?: (error: unknown) => void;
  /** The clock for the schedule (ms since epoch). Default `Date.now`. */
  readonly clock?: () => number;
}

/** Default interval between scheduled prunes (ms). */
export const DEFAULT_PRUNE_INTERVAL_MS = 60_000;
/** Default grace kept after expiry by scheduled prunes (ms). */
export const DEFAULT_PRUNE_GRACE_MS = 300_000;

/** A running schedule. */
export interface PruneSchedule {
  /** Stop the timer and wait for a prune in progress, if any, to finish. */
  stop(): Promise<void>;
}

/** Start pruning on a schedule (or do nothing when the interval is 0). */
export function startPruning(prune: (now: number) => Promise<number>, options: PruningOptions): PruneSchedule {
  const intervalMs = options.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS;
  const graceMs = options.pruneGraceMs ?? DEFAULT_PRUNE_GRACE_MS;
  const clock = options.clock ?? Date.now;
  const onError =
    options.onPruneError ??
    ((error: unknown) => {
      console.error('[baton/store] scheduled ledger prune failed:', error);
    });
  if (!Number.isFinite(intervalMs) || intervalMs < 0) {
    throw new RangeError(`pruneIntervalMs must be a finite number >= 0, got ${intervalMs}`);
  }
  if (!Number.isFinite(graceMs) || graceMs < 0) {
    throw new RangeError(`pruneGraceMs must be a finite number >= 0, got ${graceMs}`);
  }
  if (intervalMs === 0) return { stop: async () => {} };

  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = prune(clock() - graceMs)
      .then(
        () => {},
        (error: unknown) => onError(error),
      )
      .finally(() => {
        running = undefined;
      });
  }, intervalMs);
  timer.unref();

  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
