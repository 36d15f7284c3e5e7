/**
 * The scheduler loop: `createScheduler({ runner, pollMs })` calls
 * `runner.fireDueTimers()` every `pollMs` (default 1,000 ms), and again at
 * once while a call found a full batch. A due timer fires within about one
 * poll interval plus the time to play the rounds before it. Times are the
 * runner's clock (`now`): instances sharing a ledger should keep their clocks
 * in sync (NTP); an instance whose clock runs ahead fires timers early by its
 * skew, one behind fires them late by it. `baton serve` runs one with every
 * ledger unless `--no-scheduler`.
 */
import type { FireOptions, FireReport } from './fire.js';

/** What {@link createScheduler} drives: a runner (or anything with its `fireDueTimers`). */
export interface Fireable {
  fireDueTimers(options?: FireOptions): Promise<FireReport>;
}

/** Options of {@link createScheduler}. */
export interface SchedulerOptions extends FireOptions {
  readonly runner: Fireable;
  /** How often to look for due timers, ms (default 1,000). */
  readonly pollMs?: number;
  /** Told about each fire that did something (metrics). */
  readonly onFire?: (report: FireReport) => void;
  /** Told about a fire that failed (the ledger down, say); the loop goes on. */
  readonly onError?: (error: unknown) => void;
}

/** A running scheduler. */
export interface Scheduler {
  /** Stop polling; resolves once a fire in progress finished. */
  stop(): Promise<void>;
  /** Fire once now (between polls), e.g. in tests. */
  tick(): Promise<FireReport>;
}

/** Start polling for due timers (the timer is `unref`ed: it never keeps the process alive). */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const pollMs = Math.max(10, options.pollMs ?? 1000);
  const limit = options.limit ?? 100;
  let stopped = false;
  let running: Promise<FireReport> | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const fire = (): Promise<FireReport> => {
    running ??= options.runner
      .fireDueTimers({ limit, ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }) })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  const loop = async () => {
    timer = undefined;
    if (stopped) return;
    let again = false;
    try {
      const report = await fire();
      if (report.claimed > 0) options.onFire?.(report);
      again = report.claimed >= limit;
    } catch (error) {
      options.onError?.(error);
    }
    if (!stopped) {
      timer = setTimeout(loop, again ? 0 : pollMs);
      timer.unref?.();
    }
  };
  timer = setTimeout(loop, 0);
  timer.unref?.();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running?.catch(() => {});
    },
    tick: fire,
  };
}
