/**
 * Group commit for the SQLite ledger. better-sqlite3 is synchronous, and on a
 * WAL file most of a small write's cost is taking the lock and committing.
 * The first write of an event-loop turn runs at once as a plain autocommit
 * statement (no added latency when the ledger is idle); writes requested
 * later in the same turn (many requests in flight) are queued and run
 * together in one `BEGIN IMMEDIATE` transaction on the next turn. Each write
 * keeps its own statements and result, and no caller hears back before the
 * commit holding its row. If that transaction fails, every write in it fails
 * with the error and none took effect. Tiny batches run as separate
 * autocommit statements: below three writes a transaction costs more than it
 * saves (measured).
 */
import type Database from 'better-sqlite3';

interface Job {
  readonly run: () => unknown;
  readonly resolve: (value: any) => void;
  readonly reject: (error: unknown) => void;
}

type JobResult = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Batches shorter than this run as separate autocommit statements. */
const MIN_TRANSACTION_BATCH = 3;

/** Runs synchronous write closures, grouping those of one event-loop turn into one commit. */
export class WriteBatcher {
  private queue: Job[] = [];
  private wroteThisTurn = false;
  private readonly runAll: Database.Transaction<(jobs: Job[], results: JobResult[]) => void>;

  constructor(client: Database.Database) {
    this.runAll = client.transaction((jobs: Job[], results: JobResult[]) => {
      for (const job of jobs) {
        // A failed statement is rolled back alone and fails only its own job; but if
        // SQLite abandoned the whole transaction, stop: the rest must not autocommit.
        try {
          results.push({ ok: true, value: job.run() });
        } catch (error) {
          if (!client.inTransaction) throw error;
          results.push({ ok: false, error });
        }
      }
    });
  }

  /** Run `write`; resolves with its result once the commit holding it is done. */
  submit<T>(write: () => T): Promise<T> {
    if (!this.wroteThisTurn && this.queue.length === 0) {
      this.wroteThisTurn = true;
      setImmediate(() => {
        this.wroteThisTurn = false;
      });
      try {
        return Promise.resolve(write());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return new Promise<T>((resolve, reject) => {
      if (this.queue.push({ run: write, resolve, reject }) === 1) setImmediate(() => this.flush());
    });
  }

  /** Run whatever is queued now (also before the connection closes). */
  flush(): void {
    const jobs = this.queue;
    this.queue = [];
    if (jobs.length < MIN_TRANSACTION_BATCH) {
      for (const job of jobs) {
        try {
          job.resolve(job.run());
        } catch (error) {
          job.reject(error);
        }
      }
      return;
    }
    const results: JobResult[] = [];
    try {
      this.runAll.immediate(jobs, results);
    } catch (error) {
      for (const job of jobs) job.reject(error);
      return;
    }
    jobs.forEach((job, i) => {
      const result = results[i]!;
      if (result.ok) job.resolve(result.value);
      else job.reject(result.error);
    });
  }
}
