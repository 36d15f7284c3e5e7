/**
 * Blocking sleep for the synchronous SQLite start-up path (retrying a
 * migration that lost a race with another process). Never used on the
 * redemption path.
 */

const cell = new Int32Array(new SharedArrayBuffer(4));

/** Block the current thread for `ms` milliseconds. */
export function sleepSync(ms: number): void {
  Atomics.wait(cell, 0, 0, ms);
}
