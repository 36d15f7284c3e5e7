/**
 * `stats()` and `ping()` on every driver (memory, SQLite, PostgreSQL batched
 * and unbatched): redemptions counted by result, outcomes (a redemption
 * with its outcome counts as both), failed calls, a latency window that
 * stays bounded however many redemptions it times, and PostgreSQL's batch
 * and pool figures, and its ping failing behind a closed TCP proxy. Counts
 * are exact; durations are only checked to be ordered and non-negative.
 */
import { join } from 'node:path';
import { type FullLedger, LedgerUnavailableError } from '@baton/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSqliteLedger } from '../src/better-sqlite3/index.js';
import { LATENCY_WINDOW } from '../src/core/stats.js';
import { createMemoryLedger } from '../src/memory/index.js';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { newJti, T0 } from './helpers/contract/fixtures.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { tcpProxy } from './helpers/tcpProxy.js';
import { useTempDir } from './helpers/tmp.js';

const redeem = (ledger: FullLedger, jti: string, digest = 'd1') =>
  ledger.redemptions.redeem({ jti, responsesDigest: digest, expiresAt: T0 + 600_000, now: T0 });

function statsContract(name: string, open: () => Promise<FullLedger>): void {
  describe(`${name}: stats() and ping()`, () => {
    it('counts redemptions by result, outcomes and failed calls', async () => {
      const ledger = await open();
      await ledger.health.ping();
      const jti = newJti();
      expect((await redeem(ledger, jti)).status).toBe('redeemed');
      await ledger.redemptions.recordOutcome(jti, 'sealed');
      expect((await redeem(ledger, jti)).status).toBe('retry');
      expect((await redeem(ledger, jti, 'other')).status).toBe('replayed');
      const running = newJti();
      await redeem(ledger, running);
      expect((await redeem(ledger, running)).status).toBe('in_progress');
      const stats = ledger.health.stats();
      expect(stats).toMatchObject({
        redemptions: { redeemed: 2, retried: 1, inProgress: 1, replayed: 1 },
        outcomesRecorded: 1,
        errors: 0,
        unavailableErrors: 0,
        lastErrorAt: null,
      });
      const latency = stats.redeemLatency;
      expect(latency.count).toBe(5);
      expect(0 <= latency.p50Ms && latency.p50Ms <= latency.p99Ms && latency.p99Ms <= latency.maxMs).toBe(true);
      expect(JSON.stringify(stats)).not.toMatch(/postgres:\/\/|\.db/);

      await ledger.close();
      await expect(redeem(ledger, newJti())).rejects.toThrow(/closed/);
      await expect(ledger.health.ping()).rejects.toThrow(/closed/);
      const after = ledger.health.stats();
      expect(after.errors).toBe(2);
      expect(after.unavailableErrors).toBe(0);
      expect(after.lastErrorAt).toEqual(expect.any(Number));
      expect(after.redemptions).toEqual(stats.redemptions);
    });

    it('counts a redemption with its outcome as a redemption and an outcome; a loser as a redemption only', async () => {
      const ledger = await open();
      const jti = newJti();
      const withOutcome = (digest = 'd1') =>
        ledger.redemptions.redeemWithOutcome(
          { jti, responsesDigest: digest, expiresAt: T0 + 600_000, now: T0 },
          'sealed',
        );
      expect((await withOutcome()).status).toBe('redeemed');
      expect((await withOutcome()).status).toBe('retry');
      expect((await withOutcome('other')).status).toBe('replayed');
      expect((await redeem(ledger, jti)).status).toBe('retry');
      const running = newJti();
      await redeem(ledger, running);
      expect(
        (
          await ledger.redemptions.redeemWithOutcome(
            { jti: running, responsesDigest: 'd1', expiresAt: T0 + 600_000, now: T0 },
            'sealed',
          )
        ).status,
      ).toBe('in_progress');
      const stats = ledger.health.stats();
      expect(stats).toMatchObject({
        redemptions: { redeemed: 2, retried: 2, inProgress: 1, replayed: 1 },
        outcomesRecorded: 1,
        errors: 0,
      });
      expect(stats.redeemLatency.count).toBe(6);
      await ledger.close();
    });
  });
}

statsContract('memory', async () => createMemoryLedger({ pruneIntervalMs: 0 }));

const dir = useTempDir();
let n = 0;
statsContract('sqlite', async () => createSqliteLedger({ path: join(dir(), `stats-${++n}.db`), pruneIntervalMs: 0 }));

describe('the latency window', () => {
  it('stays bounded: percentiles over the most recent redemptions, count and sum over all', async () => {
    const ledger = createMemoryLedger({ pruneIntervalMs: 0 });
    const total = LATENCY_WINDOW * 3 + 7;
    for (let i = 0; i < total; i++) await redeem(ledger, newJti());
    const { redeemLatency, redemptions } = ledger.health.stats();
    expect(redemptions.redeemed).toBe(total);
    expect(redeemLatency.count).toBe(total);
    expect(redeemLatency.sumMs).toBeGreaterThan(0);
    expect(redeemLatency.maxMs).toBeGreaterThanOrEqual(redeemLatency.p99Ms);
    await ledger.close();
  });
});

describePg('postgres: stats() and ping()', (serverUrl) => {
  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  statsContract('postgres batched', () => createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 }));
  statsContract('postgres unbatched', () =>
    createPostgresLedger({ connectionString: url, pruneIntervalMs: 0, batching: false }),
  );

  it('counts batches (concurrent redemptions share statements) and reports the pool', async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0, maxConnections: 3 });
    try {
      await Promise.all(Array.from({ length: 50 }, () => redeem(ledger, newJti())));
      const stats = ledger.health.stats();
      expect(stats.driver).toBe('postgres');
      const batches = stats.batches!.redeem;
      expect(batches.items).toBe(50);
      expect(batches.sent).toBeGreaterThanOrEqual(1);
      expect(batches.sent).toBeLessThan(50);
      expect(batches.largest).toBeGreaterThan(1);
      expect(stats.pool!.total).toBeGreaterThanOrEqual(1);
      expect(stats.pool!.total).toBeLessThanOrEqual(3);
      expect(stats.pool!.waiting).toBe(0);
    } finally {
      await ledger.close();
    }
  });

  it('ping() rejects with LedgerUnavailableError while the server cannot be reached, and answers after', async () => {
    const proxy = await tcpProxy(new URL(url));
    const viaProxy = new URL(url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const ledger = await createPostgresLedger({ connectionString: viaProxy.href, pruneIntervalMs: 0 });
    try {
      await ledger.health.ping();
      await proxy.down();
      await expect(ledger.health.ping()).rejects.toBeInstanceOf(LedgerUnavailableError);
      expect(ledger.health.stats()).toMatchObject({ errors: 1, unavailableErrors: 1 });
      await proxy.up();
      await ledger.health.ping();
    } finally {
      await ledger.close();
      await proxy.down();
    }
  });
});
