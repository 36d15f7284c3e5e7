/**
 * The asynchronous group commit in `core/batcher.ts`, without a database: a
 * lone write goes out by itself, writes arriving while batches are in flight
 * wait and leave together (at most `maxBatch`, at most `maxInFlight` batches
 * at once), each write gets its own result, and a failed batch rejects every
 * write in it with the batch's error. With `lingerMs`, a busy batcher waits
 * before its next batch and a quiet one does not.
 */
import { describe, expect, it } from 'vitest';
import { Batcher } from '../src/core/batcher.js';

/** A batcher whose batches finish when the test says so; `batches` records what each held. */
function controlled(maxBatch: number, maxInFlight: number, lingerMs?: number) {
  const batches: number[][] = [];
  const finish: ((error?: Error) => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  const batcher = new Batcher<number, number>({
    maxBatch,
    maxInFlight,
    ...(lingerMs === undefined ? {} : { lingerMs }),
    run: (items) => {
      batches.push([...items]);
      running++;
      maxRunning = Math.max(maxRunning, running);
      return new Promise((resolve, reject) => {
        finish.push((error) => {
          running--;
          if (error) reject(error);
          else resolve(items.map((n) => n * 10));
        });
      });
    },
  });
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  return { batcher, batches, finish, tick, maxRunning: () => maxRunning };
}

describe('Batcher', () => {
  it('sends a lone write by itself and the writes that arrive meanwhile together', async () => {
    const { batcher, batches, finish, tick } = controlled(100, 1);
    const first = batcher.submit(1);
    await tick();
    expect(batches).toEqual([[1]]);
    const rest = [2, 3, 4, 5].map((n) => batcher.submit(n));
    await tick();
    expect(batches).toEqual([[1]]); // waiting: one batch in flight at most
    finish[0]!();
    expect(await first).toBe(10);
    await tick();
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
    finish[1]!();
    expect(await Promise.all(rest)).toEqual([20, 30, 40, 50]);
  });

  it('lingers before the next batch only while busy (the last batch carried more than one write)', async () => {
    const { batcher, batches, finish, tick } = controlled(100, 1, 40);
    // Quiet: a lone write goes out on the next turn, and so does the one after it.
    const lone = batcher.submit(1);
    await tick();
    expect(batches).toEqual([[1]]);
    finish[0]!();
    await lone;
    const next = [batcher.submit(2), batcher.submit(3)];
    await tick();
    expect(batches).toEqual([[1], [2, 3]]);
    finish[1]!();
    await Promise.all(next);
    // Busy now (the last batch held two): the next write waits, and those arriving meanwhile join it.
    const started = performance.now();
    const busy = [batcher.submit(4)];
    await tick();
    expect(batches).toHaveLength(2);
    busy.push(batcher.submit(5), batcher.submit(6));
    while (batches.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);
    expect(batches[2]).toEqual([4, 5, 6]);
    finish[2]!();
    expect(await Promise.all(busy)).toEqual([40, 50, 60]);
    expect(() => new Batcher({ maxBatch: 1, maxInFlight: 1, lingerMs: -1, run: async () => [] })).toThrow(RangeError);
  });

  it('caps batches at maxBatch and running batches at maxInFlight', async () => {
    const { batcher, batches, finish, tick, maxRunning } = controlled(3, 2);
    const all = Array.from({ length: 10 }, (_, n) => batcher.submit(n));
    await tick();
    expect(batches).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    for (let i = 0; i < 4; i++) {
      finish[i]!();
      await tick();
      await tick();
    }
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]);
    expect(await Promise.all(all)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(maxRunning()).toBe(2);
  });

  it('rejects every write of a failed batch with its error, and carries on with the next', async () => {
    const { batcher, finish, tick } = controlled(100, 1);
    const failed = [1, 2, 3].map((n) => batcher.submit(n));
    await tick();
    const later = batcher.submit(4);
    const boom = new Error('boom');
    finish[0]!(boom);
    const settled = await Promise.allSettled(failed);
    expect(settled.map((s) => (s.status === 'rejected' ? s.reason : s.value))).toEqual([boom, boom, boom]);
    await tick();
    finish[1]!();
    expect(await later).toBe(40);
  });

  it('rejects every write when a batch returns the wrong number of results', async () => {
    const batcher = new Batcher<number, number>({ maxBatch: 10, maxInFlight: 1, run: async () => [1] });
    const settled = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
    expect(settled.every((s) => s.status === 'rejected')).toBe(true);
  });
});
