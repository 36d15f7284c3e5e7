/**
 * Child process for the race tests and the benchmark. Opens a ledger
 * (`sqlite <path>` or `postgres <url>`), says `ready`, and on `go` redeems
 * the given jtis or token codes (a few in flight at once), then reports what
 * it won and exits. Driven over the fork IPC channel.
 */
import type { Ledger } from '@baton/engine';
import { createSqliteLedger } from '../../src/better-sqlite3/index.js';
import { createPostgresLedger } from '../../src/node-postgres/index.js';

/** Messages from the parent. */
export type WorkerCommand = {
  type: 'go';
  mode: 'jti' | 'token';
  items: string[];
  /** Wall-clock time (ms) to start at, so every worker starts together. */
  startAt: number;
  /** The engine clock value to redeem with. */
  now: number;
  /** How many redemptions each worker keeps in flight. */
  concurrency: number;
};

/** Messages to the parent. */
export type WorkerReport =
  | { type: 'ready' }
  | { type: 'done'; won: string[]; counts: Record<string, number>; ms: number }
  | { type: 'error'; message: string };

const [kind, location] = process.argv.slice(2);
const send = (message: WorkerReport) => process.send!(message);

async function open(): Promise<Ledger> {
  if (kind === 'sqlite') return createSqliteLedger({ path: location!, pruneIntervalMs: 0 });
  if (kind === 'postgres') return createPostgresLedger({ connectionString: location!, pruneIntervalMs: 0 });
  throw new Error(`unknown ledger kind ${kind}`);
}

async function main(): Promise<void> {
  const ledger = await open();
  process.once('message', async (command: WorkerCommand) => {
    try {
      const delay = command.startAt - Date.now();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      const won: string[] = [];
      const counts: Record<string, number> = {};
      const started = performance.now();
      let next = 0;
      const lane = async () => {
        while (next < command.items.length) {
          const item = command.items[next++]!;
          const result =
            command.mode === 'jti'
              ? await ledger.redeem({
                  jti: item,
                  responsesDigest: 'race',
                  expiresAt: command.now + 3_600_000,
                  now: command.now,
                })
              : await ledger.redeemToken(item, 'race', command.now);
          counts[result.status] = (counts[result.status] ?? 0) + 1;
          if (result.status === 'redeemed') won.push(item);
        }
      };
      await Promise.all(Array.from({ length: command.concurrency }, lane));
      const ms = performance.now() - started;
      await ledger.close();
      send({ type: 'done', won, counts, ms });
      process.disconnect();
    } catch (error) {
      send({ type: 'error', message: String((error as Error)?.stack ?? error) });
      process.exitCode = 1;
      process.disconnect();
    }
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: String((error as Error)?.stack ?? error) });
  process.exitCode = 1;
  process.disconnect();
});
