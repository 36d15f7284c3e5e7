/**
 * The SQLite group commit: the first write of a turn runs at once in
 * autocommit, later writes of the same turn share one transaction on the
 * next turn, a failing write fails alone, and a transaction SQLite abandons
 * fails every write in it with nothing committed.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WriteBatcher } from '../src/better-sqlite3/writeBatcher.js';

describe('WriteBatcher', () => {
  let client: Database.Database;
  let batcher: WriteBatcher;
  const insert = (value: string) => () => {
    client.prepare('insert into t (v) values (?)').run(value);
    return client.inTransaction;
  };
  const rows = () => (client.prepare('select v from t order by v').all() as { v: string }[]).map((r) => r.v);

  beforeEach(() => {
    client = new Database(':memory:');
    client.exec('create table t (v text primary key)');
    batcher = new WriteBatcher(client);
  });
  afterEach(() => client.close());

  it('runs the first write at once and the rest of the turn in one transaction', async () => {
    const first = batcher.submit(insert('a'));
    expect(rows()).toEqual(['a']); // ran synchronously
    const rest = ['b', 'c', 'd', 'e'].map((v) => batcher.submit(insert(v)));
    expect(rows()).toEqual(['a']); // queued for the next turn
    expect(await first).toBe(false);
    expect(await Promise.all(rest)).toEqual([true, true, true, true]);
    expect(rows()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('runs a batch of fewer than three as separate autocommit writes', async () => {
    const results = await Promise.all(['a', 'b', 'c'].map((v) => batcher.submit(insert(v))));
    expect(results).toEqual([false, false, false]);
  });

  it('fails only the write that failed', async () => {
    const results = await Promise.allSettled(['a', 'b', 'b', 'c', 'd'].map((v) => batcher.submit(insert(v))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(rows()).toEqual(['a', 'b', 'c', 'd']);
  });

  it('fails every write of a transaction SQLite abandoned, and commits none of them', async () => {
    await batcher.submit(insert('first')); // takes the turn's direct slot
    const abandon = () => {
      client.exec('ROLLBACK'); // what SQLite does itself on, for example, SQLITE_FULL
      throw new Error('disk full');
    };
    const results = await Promise.allSettled([
      batcher.submit(insert('x')),
      batcher.submit(insert('y')),
      batcher.submit(abandon),
      batcher.submit(insert('z')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(rows()).toEqual(['first']);
  });

  it('flush() runs queued writes immediately', async () => {
    void batcher.submit(insert('a'));
    const queued = batcher.submit(insert('b'));
    batcher.flush();
    expect(rows()).toEqual(['a', 'b']);
    await queued;
  });
});
