/**
 * Child process for the crash test: redeems `crash-0`, `crash-1`, ... on a
 * SQLite ledger (argv: path, engine clock, worker 0 or 1) with four in flight, so group commits are
 * in progress. Numbers `i % 4` of 0 and 1 are contested by both workers; 2 belongs to worker 0 and
 * 3 to worker 1 alone, so each wins some whichever runs ahead in the race. It records
 * an outcome for two of every three it wins, and reports what it won every
 * few dozen redemptions, until the parent kills it with SIGKILL.
 */
import { createSqliteLedger } from '../../src/better-sqlite3/index.js';

/** Messages to the parent. */
export type CrashReport = { type: 'ready' } | { type: 'progress'; done: number; won: number[] };

const path = process.argv[2]!;
/** The engine clock to redeem with (the parent replays with the same one). */
const CRASH_NOW = Number(process.argv[3]);
/** Which worker this is: it skips the other worker's own numbers. */
const WORKER = Number(process.argv[4]);
const mine = (i: number) => i % 4 < 2 || i % 4 === 2 + WORKER;
const ledger = createSqliteLedger({ path, pruneIntervalMs: 0 });
const send = (message: CrashReport) => process.send!(message);

process.once('message', async () => {
  let next = 0;
  let done = 0;
  let won: number[] = [];
  const lane = async () => {
    for (;;) {
      while (!mine(next)) next++;
      const i = next++;
      const jti = `crash-${i}`;
      const result = await ledger.redemptions.redeem({
        jti,
        responsesDigest: 'crash',
        expiresAt: CRASH_NOW + 3_600_000,
        now: CRASH_NOW,
      });
      if (result.status === 'redeemed') {
        if (i % 3 !== 0) await ledger.redemptions.recordOutcome(jti, `outcome-${i}`);
        won.push(i);
      }
      if (++done % 25 === 0) {
        send({ type: 'progress', done, won });
        won = [];
      }
    }
  };
  await Promise.all(Array.from({ length: 4 }, lane));
});
send({ type: 'ready' });
