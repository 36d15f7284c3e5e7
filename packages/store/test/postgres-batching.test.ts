/**
 * What is specific to the batched PostgreSQL ledger, on a real server: a jti
 * asked for twice in one batch is redeemed once, a batch that fails fails
 * every redemption in it with nothing committed, and a database that goes
 * away (a loopback proxy in front of the server, closed and reopened)
 * rejects calls with the engine's retryable `LedgerUnavailableError` and
 * serves again, on the same ledger, once it is back. Outcomes are recorded
 * through the primary key, never by scanning the table, and in the same
 * statement as the redemptions queued with them, as are redemptions that
 * carry their outcome (one write for a round without side effects; a losing
 * one writes nothing). Plain rewrites of parked
 * requests go out together too, each still its own compare-and-set, and two
 * ledgers rewriting the same rows in opposite orders do not deadlock. The shared contract runs
 * against the unbatched variant (`batching: false`) too.
 */
import { type FullLedger, LedgerUnavailableError } from '@baton/engine';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPostgresLedger } from '../src/node-postgres/index.js';
import { isConnectionFailure } from '../src/node-postgres/unavailable.js';
import { newId, newJti, parked, T0 } from './helpers/contract/fixtures.js';
import {
  decisionsContract,
  lifecycleContract,
  redemptionsContract,
  requestsContract,
  runsContract,
  stepsContract,
} from './helpers/contract/index.js';
import { createTestDatabase, describePg } from './helpers/postgres.js';
import { tcpProxy } from './helpers/tcpProxy.js';

const DIGEST = 'd'.repeat(43);
const redeem = (ledger: FullLedger, jti: string) =>
  ledger.redemptions.redeem({ jti, responsesDigest: DIGEST, expiresAt: T0 + 600_000, now: T0 });

describePg('postgres ledger: batching and an unavailable database', (serverUrl) => {
  let url = '';
  let drop: () => Promise<void> = async () => {};
  beforeAll(async () => {
    ({ url, drop } = await createTestDatabase(serverUrl));
  });
  afterAll(async () => drop());

  // The suites the batched statements change (redemptions above all), on the unbatched path.
  const unbatched = async () => createPostgresLedger({ connectionString: url, pruneIntervalMs: 0, batching: false });
  redemptionsContract('postgres unbatched', unbatched, unbatched);
  for (const contract of [requestsContract, decisionsContract, stepsContract, runsContract, lifecycleContract]) {
    contract('postgres unbatched', unbatched);
  }

  it('redeems a jti asked for twice in one batch once; the other ask is in progress', async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    try {
      const jti = newJti();
      const others = Array.from({ length: 10 }, () => newJti());
      const results = await Promise.all([
        redeem(ledger, jti),
        ...others.map((j) => redeem(ledger, j)),
        redeem(ledger, jti),
      ]);
      expect(results.map((r) => r.status)).toEqual(['redeemed', ...others.map(() => 'redeemed'), 'in_progress']);
    } finally {
      await ledger.close();
    }
  });

  it('records outcomes and redeems in one statement; a replay in that batch is answered after it', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    try {
      const done = Array.from({ length: 5 }, () => newJti());
      await Promise.all(done.map((jti) => redeem(ledger, jti)));
      const fresh = Array.from({ length: 5 }, () => newJti());
      const sent: string[] = [];
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      (pool as { query: unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { text?: string } | string;
        sent.push(typeof config === 'string' ? config : (config.text ?? ''));
        return query(...args);
      };
      const [outcomes, redeemed, replay] = await Promise.all([
        Promise.all(done.map((jti) => ledger.redemptions.recordOutcome(jti, `outcome of ${jti}`))),
        Promise.all(fresh.map((jti) => redeem(ledger, jti))),
        redeem(ledger, done[0]!),
      ]);
      expect(outcomes).toEqual(done.map(() => undefined));
      expect(redeemed).toEqual(fresh.map(() => ({ status: 'redeemed' })));
      // The replay's loser read-back runs after the commit that holds the outcome.
      expect(replay).toEqual({ status: 'retry', outcome: `outcome of ${done[0]}` });
      // One statement with all three kinds of writes, then the replay's read-back.
      expect(sent).toHaveLength(2);
      expect(sent[0]).toMatch(/^with recorded as \(\s*update baton_redemptions/);
      for (const jti of done.slice(1)) {
        expect(await redeem(ledger, jti)).toEqual({ status: 'retry', outcome: `outcome of ${jti}` });
      }
    } finally {
      await ledger.close();
      await pool.end();
    }
  });

  it('redeems with outcomes in the same one statement as redemptions and outcomes; losers write nothing', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    const withOutcome = (jti: string, outcome: string, digest = DIGEST) =>
      ledger.redemptions.redeemWithOutcome({ jti, responsesDigest: digest, expiresAt: T0 + 600_000, now: T0 }, outcome);
    try {
      const done = Array.from({ length: 3 }, () => newJti());
      await Promise.all(done.map((jti) => redeem(ledger, jti)));
      const plain = Array.from({ length: 3 }, () => newJti());
      const combined = Array.from({ length: 4 }, () => newJti());
      const before = ledger.health.stats().batches!;
      const sent: string[] = [];
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      (pool as { query: unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { text?: string } | string;
        sent.push(typeof config === 'string' ? config : (config.text ?? ''));
        return query(...args);
      };
      const [outcomes, redeemed, withOutcomes, losers] = await Promise.all([
        Promise.all(done.map((jti) => ledger.redemptions.recordOutcome(jti, `outcome of ${jti}`))),
        Promise.all(plain.map((jti) => redeem(ledger, jti))),
        Promise.all(combined.map((jti) => withOutcome(jti, `combined ${jti}`))),
        Promise.all([
          // combined[0] twice: the second ask loses to the first, and gets its outcome.
          withOutcome(combined[0]!, 'second'),
          // A plain redemption of a jti redeemed with its outcome in this batch: a retry.
          redeem(ledger, combined[1]!),
          // Other answers for a combined one: a replay.
          withOutcome(combined[2]!, 'other', 'e'.repeat(43)),
          // With its outcome, a jti redeemed plainly in this batch: still in progress.
          withOutcome(plain[0]!, 'too late'),
          // With its outcome, a jti whose outcome this batch records: a retry with that outcome.
          withOutcome(done[0]!, 'too late'),
        ]),
      ]);
      expect(outcomes).toEqual(done.map(() => undefined));
      expect(redeemed).toEqual(plain.map(() => ({ status: 'redeemed' })));
      expect(withOutcomes).toEqual(combined.map(() => ({ status: 'redeemed' })));
      expect(losers).toEqual([
        { status: 'retry', outcome: `combined ${combined[0]}` },
        { status: 'retry', outcome: `combined ${combined[1]}` },
        { status: 'replayed' },
        { status: 'in_progress', redeemedAt: T0 },
        { status: 'retry', outcome: `outcome of ${done[0]}` },
      ]);
      // One statement with all three kinds of writes, then the losers' read-back.
      expect(sent).toHaveLength(2);
      expect(sent[0]).toMatch(/^with recorded as \(\s*update baton_redemptions/);
      expect(sent[1]).toMatch(/^select jti, responses_digest/);
      // One batch: a redemption with its outcome counts as a redemption.
      const after = ledger.health.stats().batches!;
      expect(after.redeem.sent - before.redeem.sent).toBe(1);
      expect(after.redeem.items - before.redeem.items).toBe(plain.length + combined.length + losers.length);
      expect(after.outcome.sent - before.outcome.sent).toBe(1);
      expect(after.outcome.items - before.outcome.items).toBe(done.length);
      // The losers wrote nothing; the winners' outcomes are the ones kept.
      for (const jti of combined) {
        expect(await redeem(ledger, jti)).toEqual({ status: 'retry', outcome: `combined ${jti}` });
      }
      expect(await redeem(ledger, plain[0]!)).toEqual({ status: 'in_progress', redeemedAt: T0 });
      for (const jti of done)
        expect(await redeem(ledger, jti)).toEqual({ status: 'retry', outcome: `outcome of ${jti}` });
    } finally {
      await ledger.close();
      await pool.end();
    }
  });

  it('sends a batch of redemptions, with and without outcomes, as the named insert', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    try {
      const sent: { name?: string; text: string }[] = [];
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      (pool as { query: unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { name?: string; text?: string };
        sent.push({ ...(config.name ? { name: config.name } : {}), text: config.text ?? '' });
        return query(...args);
      };
      const plain = newJti();
      const combined = newJti();
      expect(
        await Promise.all([
          redeem(ledger, plain),
          ledger.redemptions.redeemWithOutcome(
            { jti: combined, responsesDigest: DIGEST, expiresAt: T0 + 600_000, now: T0 },
            'sealed',
          ),
        ]),
      ).toEqual([{ status: 'redeemed' }, { status: 'redeemed' }]);
      expect(sent).toEqual([
        { name: 'baton_redeem_batch', text: expect.stringMatching(/^insert into baton_redemptions/) },
      ]);
      expect(await redeem(ledger, combined)).toEqual({ status: 'retry', outcome: 'sealed' });
      expect(await redeem(ledger, plain)).toEqual({ status: 'in_progress', redeemedAt: T0 });
    } finally {
      await ledger.close();
      await pool.end();
    }
  });

  it('fails every redemption of a failed batch with its error, and commits none of them', async () => {
    const ledger = await createPostgresLedger({ connectionString: url, pruneIntervalMs: 0 });
    try {
      const good = Array.from({ length: 5 }, () => newJti());
      // PostgreSQL text cannot hold NUL: the one statement of this batch fails.
      const settled = await Promise.allSettled([...good.map((j) => redeem(ledger, j)), redeem(ledger, 'bad\u0000jti')]);
      const reasons = settled.map((s) => (s.status === 'rejected' ? s.reason : undefined));
      expect(reasons.every((r) => r instanceof Error)).toBe(true);
      expect(new Set(reasons).size).toBe(1);
      // Nothing was committed: each good jti is still redeemable.
      for (const jti of good) expect(await redeem(ledger, jti)).toEqual({ status: 'redeemed' });
    } finally {
      await ledger.close();
    }
  });

  it('rewrites parked requests in one statement, each its own compare-and-set, and clears only the written waits', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    try {
      const wait = (id: string) => [{ event: 'bench.done', match: id }];
      const ids = Array.from({ length: 6 }, () => newId());
      for (const id of ids) await ledger.requests.parkRequest(parked(id, { events: wait(id) }), null);
      const sent: string[] = [];
      const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
      (pool as { query: unknown }).query = (...args: unknown[]) => {
        const config = args[0] as { text?: string } | string;
        sent.push(typeof config === 'string' ? config : (config.text ?? ''));
        return query(...args);
      };
      const done = (id: string, state: string) =>
        parked(id, { status: 'completed', waitingFor: [], state, now: T0 + 1 });
      // Two writers of ids[0] read version 1: one wins. ids[1] is written over a stale version.
      const results = await Promise.all([
        ledger.requests.parkRequest(done(ids[0]!, 'first'), 1),
        ledger.requests.parkRequest(done(ids[0]!, 'second'), 1),
        ledger.requests.parkRequest(done(ids[1]!, 'stale'), 7),
        ...ids.slice(2, 5).map((id) => ledger.requests.parkRequest(done(id, `done ${id}`), 1)),
      ]);
      expect(results).toEqual([
        { status: 'parked', version: 2 },
        { status: 'conflict' },
        { status: 'conflict' },
        { status: 'parked', version: 2 },
        { status: 'parked', version: 2 },
        { status: 'parked', version: 2 },
      ]);
      // One statement for the distinct ids, then the second write of ids[0] after its commit.
      expect(sent).toHaveLength(2);
      expect(sent.every((text) => text.startsWith('with input as ('))).toBe(true);
      expect((await ledger.requests.getRequest(ids[0]!))?.state).toBe('first');
      expect((await ledger.requests.getRequest(ids[1]!))?.version).toBe(1);
      // The waits of the written rows are gone; the unwritten ones still wait.
      const waiting = async (id: string) =>
        (await ledger.events.eventWaiters({ event: 'bench.done', match: id, limit: 10 })).map((w) => w.id);
      for (const id of [ids[0]!, ...ids.slice(2, 5)]) expect(await waiting(id)).toEqual([]);
      for (const id of [ids[1]!, ids[5]!]) expect(await waiting(id)).toEqual([id]);
    } finally {
      await ledger.close();
      await pool.end();
    }
  });

  it('rewrites the same requests from two ledgers in opposite orders without a deadlock', async () => {
    // Plans that visit the rows in the batch's order (as on a large table), not the table's.
    const options = '-c enable_hashjoin=off -c enable_mergejoin=off -c enable_seqscan=off';
    const pools = [0, 1].map(() => new pg.Pool({ connectionString: url, options, max: 2 }));
    const [a, b] = await Promise.all(pools.map((pool) => createPostgresLedger({ pool, pruneIntervalMs: 0 })));
    try {
      const ids = Array.from({ length: 40 }, () => newId());
      for (const id of ids) await a!.requests.parkRequest(parked(id), null);
      const write = (ledger: FullLedger | undefined, order: string[], by: string) =>
        Promise.all(order.map((id) => ledger!.requests.parkRequest(parked(id, { state: by, now: T0 + 1 }), 1)));
      const [fromA, fromB] = await Promise.all([write(a, ids, 'a'), write(b, [...ids].reverse(), 'b')]);
      // Each request was written once, by whichever ledger reached it first.
      const byB = [...fromB].reverse();
      for (const [i, id] of ids.entries()) {
        const won = [fromA[i]!, byB[i]!].filter((r) => r.status === 'parked');
        expect(won).toEqual([{ status: 'parked', version: 2 }]);
        expect((await a!.requests.getRequest(id))?.version).toBe(2);
      }
    } finally {
      await Promise.all([a!.close(), b!.close()]);
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('records outcomes through the primary key after the table has grown', async () => {
    // One connection, the test's too: its statistics can be flushed and read between the calls.
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    const ledger = await createPostgresLedger({ pool, pruneIntervalMs: 0 });
    const seqScans = async () => {
      await pool.query('select pg_stat_force_next_flush()');
      const { rows } = await pool.query<{ seq_scan: string }>(
        "select seq_scan from pg_stat_user_tables where relname = 'baton_redemptions'",
      );
      return Number(rows[0]!.seq_scan);
    };
    const outcomes = async (jtis: string[]) => {
      // One at a time: one statement each, more than the 5 runs after which PostgreSQL keeps a
      // named statement's generic plan for the connection.
      for (const jti of jtis) await ledger.redemptions.recordOutcome(jti, `outcome of ${jti}`);
    };
    try {
      // A small table (a fresh deployment), analyzed, and outcomes recorded on this connection.
      const early = Array.from({ length: 200 }, () => newJti());
      await Promise.all(early.map((jti) => redeem(ledger, jti)));
      await pool.query('analyze baton_redemptions');
      await outcomes(early.slice(0, 12));
      // The table grows (before autovacuum analyzes it again); outcomes keep coming.
      const later = Array.from({ length: 5000 }, () => newJti());
      await Promise.all(later.map((jti) => redeem(ledger, jti)));
      const before = await seqScans();
      await outcomes(later.slice(0, 12));
      expect((await seqScans()) - before).toBe(0);
      expect(await redeem(ledger, later[11]!)).toEqual({ status: 'retry', outcome: `outcome of ${later[11]}` });
    } finally {
      await ledger.close();
      await pool.end();
    }
  });

  it('rejects with LedgerUnavailableError while the database is unreachable and serves again after', async () => {
    const target = new URL(url);
    const gate = await tcpProxy(target);
    const viaProxy = new URL(url);
    viaProxy.port = String(gate.port);
    viaProxy.hostname = '127.0.0.1';
    for (const batching of [undefined, false] as const) {
      const ledger = await createPostgresLedger({
        connectionString: viaProxy.toString(),
        pruneIntervalMs: 0,
        ...(batching === false ? { batching } : {}),
      });
      try {
        expect(await redeem(ledger, newJti())).toEqual({ status: 'redeemed' });
        await gate.down();
        const refused = await redeem(ledger, newJti()).catch((e: unknown) => e);
        expect(refused).toBeInstanceOf(LedgerUnavailableError);
        expect((refused as Error).message).toMatch(/PostgreSQL ledger at .* is unavailable/);
        await expect(ledger.requests.getRequest('nope')).rejects.toBeInstanceOf(LedgerUnavailableError);
        await gate.up();
        const jti = newJti();
        expect(await redeem(ledger, jti)).toEqual({ status: 'redeemed' });
        expect((await redeem(ledger, jti)).status).toBe('in_progress');
      } finally {
        await ledger.close();
      }
    }
    await gate.down();
  });

  it('tells connection failures from other errors', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006', '08001', '53300']) {
      expect(isConnectionFailure(withCode(code))).toBe(true);
    }
    expect(isConnectionFailure(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isConnectionFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionFailure(new Error('wrapped', { cause: withCode('57P01') }))).toBe(true);
    for (const code of ['23505', '22021', '42P01', '40P01']) expect(isConnectionFailure(withCode(code))).toBe(false);
    expect(isConnectionFailure(new Error('syntax error'))).toBe(false);
  });
});
