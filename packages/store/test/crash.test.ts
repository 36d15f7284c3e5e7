/**
 * Crash safety of the SQLite ledger: two processes redeem the same jtis on
 * one file (plus a share of their own, so each wins some whichever runs ahead), and each is killed with SIGKILL in the middle of its
 * redemptions (group commits and outcome writes in flight). Afterwards the
 * file passes `PRAGMA integrity_check`, no jti was reported won by both, and
 * after a restart no jti that either had redeemed can be redeemed again,
 * while recorded outcomes still answer retries.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { useTempDir } from './helpers/tmp.js';
import { exited, forkWorker, nextMessage } from './helpers/workers.js';
import type { CrashReport } from './workers/crash-worker.js';

type Progress = Extract<CrashReport, { type: 'progress' }>;

const CRASH_NOW = 1_800_000_000_000;

describe('SIGKILL in the middle of SQLite redemptions', () => {
  const dir = useTempDir();

  it('leaves a sound file in which nothing can be redeemed twice', { timeout: 180_000 }, async () => {
    const path = join(dir(), 'crash.db');
    await createSqliteLedger({ path, pruneIntervalMs: 0 }).close();

    const workers = [
      forkWorker('crash-worker.ts', [path, String(CRASH_NOW), '0']),
      forkWorker('crash-worker.ts', [path, String(CRASH_NOW), '1']),
    ];
    const reported = workers.map(() => [] as number[]);
    const progress = workers.map(() => 0);
    workers.forEach((worker, w) => {
      worker.on('message', (message: CrashReport) => {
        if (message.type !== 'progress') return;
        reported[w]!.push(...message.won);
        progress[w] = message.done;
      });
    });
    await Promise.all(workers.map((w) => nextMessage(w, (m) => m.type === 'ready')));
    for (const worker of workers) worker.send({ type: 'go' });

    // Kill the first after it has done some work, the second a little later, both mid-flight.
    await nextMessage<Progress>(workers[0]!, (m) => m.type === 'progress' && m.done >= 400);
    workers[0]!.kill('SIGKILL');
    await exited(workers[0]!);
    const secondFrom = progress[1]!;
    await nextMessage<Progress>(workers[1]!, (m) => m.type === 'progress' && m.done >= secondFrom + 400);
    workers[1]!.kill('SIGKILL');
    await exited(workers[1]!);
    expect(workers.map((w) => w.signalCode)).toEqual(['SIGKILL', 'SIGKILL']);

    // The file is sound, and holds every redemption either process reported.
    const db = new Database(path);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const rows = db.prepare('select jti, outcome from baton_redemptions').all() as {
      jti: string;
      outcome: string | null;
    }[];
    db.close();
    const stored = new Map(rows.map((row) => [Number(row.jti.slice('crash-'.length)), row.outcome]));
    const [first, second] = reported as [number[], number[]];
    expect(first.filter((i) => second.includes(i))).toEqual([]);
    for (const i of [...first, ...second]) expect(stored.has(i)).toBe(true);
    expect(first.length).toBeGreaterThan(0);
    expect(second.length).toBeGreaterThan(0);

    // After a restart, nothing stored can be redeemed again; the rest can, exactly once.
    const highest = Math.max(...stored.keys());
    const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
    const request = (i: number) => ({
      jti: `crash-${i}`,
      responsesDigest: 'crash',
      expiresAt: CRASH_NOW + 3_600_000,
      now: CRASH_NOW,
    });
    let fresh = 0;
    for (let i = 0; i <= highest + 50; i++) {
      const result = await ledger.redemptions.redeem(request(i));
      if (!stored.has(i)) {
        expect(result).toEqual({ status: 'redeemed' });
        fresh++;
      } else if (stored.get(i) !== null) {
        expect(result).toEqual({ status: 'retry', outcome: `outcome-${i}` });
      } else {
        // Redeemed by the killed process and never finished: the engine tells it from a round
        // still running by its age (`redeemedAt`).
        expect(result).toEqual({ status: 'in_progress', redeemedAt: CRASH_NOW });
      }
    }
    expect(fresh).toBeGreaterThanOrEqual(50);
    for (let i = 0; i <= highest + 50; i++) {
      expect((await ledger.redemptions.redeem(request(i))).status).not.toBe('redeemed');
    }
    await ledger.close();
  });
});
