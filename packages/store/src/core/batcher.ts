/**
 * Group commit for ledgers whose writes are asynchronous round trips (the
 * PostgreSQL ledger): concurrent writes of one kind are gathered and sent as
 * one statement in one transaction, so a whole batch waits for one commit
 * (one WAL flush) instead of one each. Writes submitted while fewer than
 * `maxInFlight` batches are running go out on the next event-loop turn (no
 * added latency when the ledger is idle, beyond that turn); writes submitted
 * while all are busy wait and leave together with the next batch, up to
 * `maxBatch` at a time. With `lingerMs`, a busy batcher (its last batch
 * carried more than one write) waits that long before sending the next, so
 * that more concurrent writes share its commit; one whose last batch was a
 * lone write still sends on the next turn, so a quiet ledger adds no latency.
 * No caller hears back before the commit holding its
 * write: a batch resolves each write with its own result, or, when the batch
 * fails, rejects every write in it with that error (nothing of it took
 * effect: the batch was one statement). The SQLite ledger's `WriteBatcher`
 * is the synchronous counterpart: same promise to callers, but its "busy"
 * is the current event-loop turn rather than a batch in flight.
 */

/** How a {@link Batcher} sends its batches. */
export interface BatcherOptions<I, O> {
  /**
   * Write `items` in one statement (one transaction) and return one result per item, in the
   * same order. Throwing fails every item of the batch with the error.
   */
  readonly run: (items: readonly I[]) => Promise<readonly O[]>;
  /** Most items per batch. */
  readonly maxBatch: number;
  /** Most batches running at once (each holds one connection). */
  readonly maxInFlight: number;
  /** Told the size of each batch as it is sent (for metrics). */
  readonly onBatch?: (size: number) => void;
  /**
   * While busy (the last batch carried more than one write), wait this long before sending the
   * next batch, ms; default 0 (never wait).
   */
  readonly lingerMs?: number;
}

interface Waiter<I, O> {
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

/** Gathers concurrent writes into batches; see the module comment. */
export class Batcher<I, O> {
  private queue: Waiter<I, O>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Writes the last batch carried: more than one means concurrent writers (see `lingerMs`). */
  private lastBatch = 0;
  private readonly options: BatcherOptions<I, O>;

  constructor(options: BatcherOptions<I, O>) {
    if (!(options.maxBatch >= 1) || !(options.maxInFlight >= 1)) {
      throw new RangeError('Batcher: maxBatch and maxInFlight must be at least 1');
    }
    if (options.lingerMs !== undefined && !(options.lingerMs >= 0 && options.lingerMs <= 1000)) {
      throw new RangeError('Batcher: lingerMs must be between 0 and 1000');
    }
    this.options = options;
  }

  /** Write `item`; resolves with its result once the batch holding it has committed. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Batches running now (for metrics and tests). */
  get running(): number {
    return this.inFlight;
  }

  /** Resolves once nothing is queued or running (before a connection pool is ended). */
  async drain(): Promise<void> {
    while (this.queue.length > 0 || this.inFlight > 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    const fire = () => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) this.send();
    };
    const linger = this.options.lingerMs ?? 0;
    if (linger > 0 && this.lastBatch > 1) setTimeout(fire, linger);
    else setImmediate(fire);
  }

  private send(): void {
    const batch = this.queue.splice(0, this.options.maxBatch);
    this.lastBatch = batch.length;
    this.inFlight++;
    this.options.onBatch?.(batch.length);
    let results: Promise<readonly O[]>;
    try {
      results = this.options.run(batch.map((waiter) => waiter.item));
    } catch (error) {
      results = Promise.reject(error);
    }
    results.then(
      (values) => {
        if (values.length !== batch.length) {
          const error = new Error(`Batcher: a batch of ${batch.length} returned ${values.length} results`);
          for (const waiter of batch) waiter.reject(error);
        } else {
          for (const [i, waiter] of batch.entries()) waiter.resolve(values[i]!);
        }
        this.settled();
      },
      (error: unknown) => {
        for (const waiter of batch) waiter.reject(error);
        this.settled();
      },
    );
  }

  private settled(): void {
    this.inFlight--;
    this.schedule();
  }
}
