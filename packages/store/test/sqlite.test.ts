/**
 * The shared Ledger contract against the SQLite ledger on a real file, plus
 * what is specific to SQLite: WAL on disk, the busy timeout across
 * processes, hashed token codes, folder creation, scheduled pruning and
 * per-write failure isolation inside a group commit.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { LedgerError, openLedger } from '../src/index.js';
import { newJti, T0 } from './helpers/contract/fixtures.js';
import { describeLedgerContract } from './helpers/contract/index.js';
import { useTempDir } from './helpers/tmp.js';

const dir = useTempDir();
let n = 0;
const freshPath = () => join(dir(), `ledger-${++n}.db`);

describeLedgerContract(
  'sqlite',
  async (store) => createSqliteLedger({ path: join(dir(), `${store}.db`), pruneIntervalMs: 0 }),
  {
    shared: true,
  },
);

describe('sqlite ledger', () => {
  it('puts the file in WAL mode and creates missing folders', async () => {
    const path = join(dir(), 'nested', 'deeper', 'ledger.db');
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 });
    const db = new Database(path, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    await ledger.close();
  });

  it('stores only the sha256 of a token code', async () => {
    const path = freshPath();
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    const code = await ledger.redemptions.mintToken({ purpose: 'p', data: 'x', expiresAt: T0 + 1000, now: T0 });
    const db = new Database(path, { readonly: true });
    const rows = db.prepare('select * from baton_tokens').all() as Record<string, unknown>[];
    db.close();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.code_hash).toBe(createHash('sha256').update(code).digest('base64url'));
    expect(JSON.stringify(rows)).not.toContain(code);
    await ledger.close();
  });

  it('fails with the busy error after busyTimeoutMs while another connection holds the write lock', async () => {
    const path = freshPath();
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 100, pruneIntervalMs: 0 });
    const holder = new Database(path);
    holder.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    await expect(
      ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 }),
    ).rejects.toThrow(/locked|busy/i);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    holder.exec('ROLLBACK');
    holder.close();
    expect(
      await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 }),
    ).toEqual({
      status: 'redeemed',
    });
    await ledger.close();
  });

  it('waits for another process that holds the write lock (busy timeout)', async () => {
    const path = freshPath();
    // A busy timeout far beyond the hold: on a loaded machine either process may be slow.
    const ledger = createSqliteLedger({ path, busyTimeoutMs: 30_000, pruneIntervalMs: 0 });
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require('better-sqlite3'); const db = new D(process.argv[1]);
         db.exec('BEGIN IMMEDIATE'); console.log('locked');
         Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1500);
         const released = Date.now(); db.exec('COMMIT'); db.close(); console.log('released ' + released);`,
        path,
      ],
      { cwd: join(import.meta.dirname, '..'), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    const exit = new Promise((resolve) => holder.once('exit', resolve));
    await new Promise<void>((resolve) =>
      holder.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('locked')) resolve();
      }),
    );
    const started = Date.now();
    expect(
      await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: T0 + 1, now: T0 }),
    ).toEqual({
      status: 'redeemed',
    });
    const ended = Date.now();
    await exit;
    const released = Number(/released (\d+)/.exec(output)?.[1]);
    // It asked while the other process held the lock, and got its answer only once the lock was
    // released: it waited (timestamps, not a duration a slow machine could shorten or stretch).
    expect(started).toBeLessThan(released);
    expect(ended).toBeGreaterThanOrEqual(released);
    await ledger.close();
  });

  it('prunes on a schedule with the real clock', async () => {
    const path = freshPath();
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 20, pruneGraceMs: 0 });
    const now = Date.now();
    await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: now - 1, now: now - 10 });
    await ledger.redemptions.redeem({ jti: newJti(), responsesDigest: 'd', expiresAt: now + 60_000, now });
    const db = new Database(path, { readonly: true });
    const count = () => (db.prepare('select count(*) as c from baton_redemptions').get() as { c: number }).c;
    expect(count()).toBe(2);
    // A generous bound: the schedule runs every 20 ms, but a loaded machine may delay timers.
    const deadline = Date.now() + 30_000;
    while (count() !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(count()).toBe(1);
    db.close();
    await ledger.close();
  });

  it('fails one write of a group commit without failing the others', async () => {
    const ledger = createSqliteLedger({ path: freshPath(), pruneIntervalMs: 0 });
    const good = Array.from({ length: 10 }, newJti);
    const results = await Promise.allSettled([
      ...good.map((jti) => ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 1, now: T0 })),
      // A value better-sqlite3 cannot bind: this statement fails inside the batch.
      ledger.redemptions.redeem({
        jti: { not: 'a string' } as unknown as string,
        responsesDigest: 'd',
        expiresAt: T0 + 1,
        now: T0,
      }),
    ]);
    expect(results.slice(0, 10).every((r) => r.status === 'fulfilled' && r.value.status === 'redeemed')).toBe(true);
    expect(results[10]!.status).toBe('rejected');
    for (const jti of good) {
      expect(await ledger.redemptions.redeem({ jti, responsesDigest: 'd', expiresAt: T0 + 1, now: T0 })).toEqual({
        status: 'in_progress',
        redeemedAt: T0,
      });
    }
    await ledger.close();
  });

  it('rejects bad options with clear errors', () => {
    expect(() => createSqliteLedger({ path: '' })).toThrow(LedgerError);
    expect(() => createSqliteLedger({ path: freshPath(), busyTimeoutMs: -5 })).toThrow(/busyTimeoutMs/);
    const file = join(dir(), 'a-file');
    writeFileSync(file, 'not a folder');
    expect(() => createSqliteLedger({ path: join(file, 'x.db') })).toThrow(/SQLite ledger/);
  });

  it('is what openLedger("sqlite:PATH") opens', async () => {
    const path = freshPath();
    const ledger = await openLedger(`sqlite:${path}`, { pruneIntervalMs: 0 });
    await ledger.redemptions.redeem({ jti: 'x', responsesDigest: 'd', expiresAt: T0 + 1, now: T0 });
    await ledger.close();
    const again = createSqliteLedger({ path, pruneIntervalMs: 0 });
    expect(await again.redemptions.redeem({ jti: 'x', responsesDigest: 'd', expiresAt: T0 + 1, now: T0 })).toEqual({
      status: 'in_progress',
      redeemedAt: T0,
    });
    await again.close();
  });
});
